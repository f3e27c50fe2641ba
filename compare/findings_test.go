package compare

import (
	"reflect"
	"testing"

	"github.com/memscan/memscan/analyze"
)

// TestDiffFindings pairs findings by ID: kept, cured and new ones, a finding firing on several devices paired
// by its first firing, the baseline's order first.
func TestDiffFindings(t *testing.T) {
	rec := func(id, sev string, v float64) analyze.Recommendation {
		return analyze.Recommendation{ID: id, Title: "title " + id, Severity: sev, Value: v, Unit: analyze.UnitBytes}
	}
	before := []analyze.Recommendation{rec("leak", "warning", 512), rec("fragmentation", "warning", 100), rec("fragmentation", "warning", 90)}
	after := []analyze.Recommendation{rec("cache-overhead", "info", 1.2), rec("fragmentation", "info", 40)}
	want := []FindingChange{
		{ID: "leak", Title: "title leak", Unit: analyze.UnitBytes, BeforeSeverity: "warning", BeforeValue: 512},
		{ID: "fragmentation", Title: "title fragmentation", Unit: analyze.UnitBytes, BeforeSeverity: "warning", BeforeValue: 100, AfterSeverity: "info", AfterValue: 40},
		{ID: "cache-overhead", Title: "title cache-overhead", Unit: analyze.UnitBytes, AfterSeverity: "info", AfterValue: 1.2},
	}
	if got := diffFindings(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := diffFindings(nil, nil); len(got) != 0 {
		t.Errorf("no findings on either side gave %+v", got)
	}
}
