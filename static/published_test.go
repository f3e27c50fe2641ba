package static

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/units"
)

// publishedRow is one published measurement memscan is checked against: a config in
// testdata/static/published that reproduces the run as its source describes it, what the source measured and
// the figure it reports.
type publishedRow struct {
	Config string `json:"config"`
	Source string `json:"source"`
	// Measured names the quantity: reserved (torch.cuda.max_memory_reserved: torchtitan's "memory" column and
	// log), active (torch.cuda.memory_stats active_bytes.all.peak: torchtune's "Peak Memory Active"; compared
	// with peak allocated, which it equals up to blocks still in use by other streams), allocated, nvidia-smi
	// (the device total: reserved + CUDA context + NCCL), or max_seq_length (the longest sequence that trains).
	Measured string  `json:"measured"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"` // GiB, GB (10^9 bytes, as the source writes it) or tokens
	What     string  `json:"what"`
}

// The bounds for the published measurements: every row within 25 %, the median within 10 %.
const (
	publishedWorstBound  = 0.25
	publishedMedianBound = 0.10
)

func loadPublished(t *testing.T) []publishedRow {
	t.Helper()
	data, err := os.ReadFile("../testdata/static/published/measurements.json")
	if err != nil {
		t.Fatal(err)
	}
	// Unknown keys are errors: every row is held to the same bound, none carries its own.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rows []publishedRow
	if err := dec.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// predictPublished is memscan's figure for a row, in the row's unit.
func predictPublished(row publishedRow) (float64, error) {
	cfg, err := LoadConfig(filepath.Join("../testdata/static/published", row.Config))
	if err != nil {
		return 0, err
	}
	if row.Measured == "max_seq_length" {
		res, err := MaxSeqLength(context.Background(), *cfg)
		if err != nil {
			return 0, err
		}
		return float64(res.Max), nil
	}
	r, err := Estimate(*cfg)
	if err != nil {
		return 0, err
	}
	var b int64
	switch row.Measured {
	case "reserved":
		b = r.Summary.PeakReservedBytes
	case "active", "allocated":
		b = r.Summary.PeakMemoryBytes
	case "nvidia-smi":
		b = r.Summary.DeviceTotalBytes
	default:
		return 0, fmt.Errorf("unknown measure %q", row.Measured)
	}
	if row.Unit == "GB" {
		return float64(b) / 1e9, nil
	}
	return float64(b) / gib, nil
}

// TestPublishedMeasurements predicts every published measurement of testdata/static/published (torchtitan's
// and torchao's benchmark pages, torchtune's README optimisation table, PEFT's FSDP and DeepSpeed guides,
// Unsloth's context-length tables) and holds each within 25 % and the median within 10 %. The README's
// validation table is this test's output: go test ./static -run Published -update rewrites it.
func TestPublishedMeasurements(t *testing.T) {
	rows := loadPublished(t)
	var errs []float64
	var table strings.Builder
	table.WriteString("| source | configuration | measured | published | predicted | error |\n|---|---|---|---:|---:|---:|\n")
	for _, row := range rows {
		got, err := predictPublished(row)
		if err != nil {
			t.Errorf("%s: %v", row.Config, err)
			continue
		}
		e := got/row.Value - 1
		errs = append(errs, math.Abs(e))
		if math.Abs(e) > publishedWorstBound {
			t.Errorf("%s (%s): predicted %.4g %s, published %.4g (%+.1f%%, bound ±%.0f%%)", row.Config, row.What, got, row.Unit, row.Value, 100*e, 100*publishedWorstBound)
		}
		t.Logf("%-60s %-14s published %8.4g predicted %8.4g %s (%+6.1f%%)", strings.TrimSuffix(row.Config, ".json"), row.Measured, row.Value, got, row.Unit, 100*e)
		fmt.Fprintf(&table, "| [%s](%s) | `%s` | %s | %s %s | %s %s | %+.1f %% |\n", sourceName(row.Source), row.Source,
			strings.TrimSuffix(row.Config, ".json"), row.Measured, formatFigure(row.Value, row.Unit), row.Unit, formatFigure(got, row.Unit), row.Unit, 100*e)
	}
	med, worst := units.Median(errs), maxOf(errs)
	fmt.Fprintf(&table, "\nMedian |error| %.1f %%, worst %.1f %% over %d published measurements.\n", 100*med, 100*worst, len(errs))
	t.Logf("median |error| %.1f%%, worst %.1f%% over %d rows", 100*med, 100*worst, len(errs))
	if med > publishedMedianBound {
		t.Errorf("median |error| %.1f%% (bound %.0f%%)", 100*med, 100*publishedMedianBound)
	}
	checkReadmeTable(t, table.String())
}

func formatFigure(v float64, unit string) string {
	if unit == "tokens" {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// sourceName is the short name of a source address: the repository (or site) it is in.
func sourceName(url string) string {
	u := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "github.com/")
	parts := strings.Split(u, "/")
	if strings.Contains(parts[0], ".") {
		return parts[0]
	}
	if len(parts) >= 2 {
		return parts[0] + "/" + parts[1]
	}
	return u
}

const (
	readmeTableStart = "<!-- published-validation:start -->\n"
	readmeTableEnd   = "<!-- published-validation:end -->"
)

// checkReadmeTable requires the README's validation table to be the one the test computed (-update writes it).
func checkReadmeTable(t *testing.T, table string) {
	t.Helper()
	path := "../README.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, readmeTableStart), strings.Index(s, readmeTableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q … %q markers of the validation table", strings.TrimSpace(readmeTableStart), readmeTableEnd)
	}
	if s[i+len(readmeTableStart):j] == table {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(readmeTableStart)]+table+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's validation table differs from the predictions; rerun with -update if the change is intended")
}
