package compare

import (
	"reflect"
	"testing"

	"github.com/memscan/memscan/findings"
)

// TestDiffFindings pairs findings by ID: kept, cured and new ones, a finding firing on several devices paired
// by its first firing, the baseline's order first.
func TestDiffFindings(t *testing.T) {
	rec := func(id findings.ID, sev findings.Severity, v float64) findings.Finding {
		return findings.Finding{ID: id, Title: "title " + string(id), Severity: sev, Value: v, Unit: findings.Bytes}
	}
	before := []findings.Finding{rec("leak", "warning", 512), rec("fragmentation", "warning", 100), rec("fragmentation", "warning", 90)}
	after := []findings.Finding{rec("cache-overhead", "info", 1.2), rec("fragmentation", "info", 40)}
	want := []FindingChange{
		{ID: "leak", Title: "title leak", Unit: findings.Bytes, BeforeSeverity: "warning", BeforeValue: 512},
		{ID: "fragmentation", Title: "title fragmentation", Unit: findings.Bytes, BeforeSeverity: "warning", BeforeValue: 100, AfterSeverity: "info", AfterValue: 40},
		{ID: "cache-overhead", Title: "title cache-overhead", Unit: findings.Bytes, AfterSeverity: "info", AfterValue: 1.2},
	}
	if got := diffFindings(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := diffFindings(nil, nil); len(got) != 0 {
		t.Errorf("no findings on either side gave %+v", got)
	}
}
