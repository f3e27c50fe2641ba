package static

import (
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/units"
)

// h200Run is the part of one runs.json record the test compares with: PyTorch's own
// torch.cuda.max_memory_allocated over all phases of the run (peak_allocated), and max_memory_reserved.
type h200Run struct {
	Name          string `json:"name"`
	Mode          string `json:"mode"`
	PeakAllocated int64  `json:"peak_allocated"`
	PeakReserved  int64  `json:"peak_reserved"`
	OOM           string `json:"oom"`
	Phases        []struct {
		Phase string `json:"phase"`
		Alloc int64  `json:"alloc"`
	} `json:"phases"`
}

// TestH200Runs predicts every shared H200 run from its config in testdata/static/h200 (one file per run,
// named as in runs.json) and requires the peak allocated within 3 % of the measured one and the peak reserved
// within 5 %. A run that ran out of memory is compared at the predicted failure point: what was allocated
// when the first request failed.
func TestH200Runs(t *testing.T) {
	var runs []h200Run
	realsnap.GPURuns(t, &runs)
	byName := map[string]h200Run{}
	for _, r := range runs {
		byName[r.Name] = r
	}
	files, _ := filepath.Glob("../testdata/static/h200/*.json")
	if len(files) < 10 {
		t.Fatalf("only %d H200 run configs", len(files))
	}
	var allocErr, resErr []float64
	for _, f := range files {
		name := filepath.Base(f)
		name = name[:len(name)-len(".json")]
		t.Run(name, func(t *testing.T) {
			run, ok := byName[name]
			if !ok {
				t.Fatalf("no run %q in runs.json", name)
			}
			cfg, err := LoadConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Estimate(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := r.Summary.PeakMemoryBytes
			if run.OOM != "" {
				if r.OOM == nil || r.Fit.Fits {
					t.Fatalf("the run ran out of memory; predicted %s, no failure point", r.Fit.Verdict)
				}
				got = r.OOM.AllocatedBytes
				// PyTorch's message names the request that failed ("Tried to allocate 1.75 GiB").
				if m := triedRE.FindStringSubmatch(run.OOM); m != nil {
					want, _ := strconv.ParseFloat(m[1], 64)
					unit := map[string]float64{"GiB": gib, "MiB": mib}[m[2]]
					if math.Abs(float64(r.OOM.RequestBytes)/(want*unit)-1) > 0.01 {
						t.Errorf("failing request %d B (%s at layer %d), PyTorch reports %s %s", r.OOM.RequestBytes, r.OOM.Operator, r.OOM.Layer, m[1], m[2])
					}
				}
			}
			e := float64(got)/float64(run.PeakAllocated) - 1
			er := float64(r.Summary.PeakReservedBytes)/float64(run.PeakReserved) - 1
			allocErr = append(allocErr, math.Abs(e))
			if run.OOM == "" { // a failed run's reserved is the pool at the failure, not a step's peak
				resErr = append(resErr, math.Abs(er))
			}
			t.Logf("peak allocated %.3f GiB vs measured %.3f GiB (%+.2f%%); reserved %.3f vs %.3f GiB (%+.1f%%)",
				float64(got)/gib, float64(run.PeakAllocated)/gib, 100*e, float64(r.Summary.PeakReservedBytes)/gib, float64(run.PeakReserved)/gib, 100*er)
			if math.Abs(e) > 0.03 {
				t.Errorf("peak allocated off by %+.2f%% (bound 3%%)", 100*e)
			}
			// Between steps only the weights, the optimizer states and the buffers stay allocated: the last phase
			// named stepN (after optimizer.step() and zero_grad) measures that.
			if run.Mode == "train" && run.OOM == "" {
				var end int64
				for _, ph := range run.Phases {
					if strings.HasPrefix(ph.Phase, "step") && !strings.Contains(ph.Phase, "_after_") {
						end = ph.Alloc
					}
				}
				if d := float64(r.Stages[0].EndOfStepAllocated)/float64(end) - 1; math.Abs(d) > 0.03 {
					t.Errorf("end of step %d B, measured %d B (%+.1f%%)", r.Stages[0].EndOfStepAllocated, end, 100*d)
				}
			}
			// Peak reserved comes from replaying the predicted allocation sequence through the allocator model,
			// its steady step repeated until the pool settles (the eager-attention run's pool grows by one more
			// 4·b·s·V block in its third step's backward, measured and replayed).
			if run.OOM == "" && (math.Abs(er) > 0.05 || r.Summary.ReservedSource != "allocator replay") {
				t.Errorf("peak reserved off by %+.1f%% (bound 5%%, from %s)", 100*er, r.Summary.ReservedSource)
			}
		})
	}
	t.Logf("peak allocated: median |error| %.2f%%, max %.2f%%; reserved (allocator replay): median %.1f%%, max %.1f%%",
		100*units.Median(allocErr), 100*maxOf(allocErr), 100*units.Median(resErr), 100*maxOf(resErr))
}

var triedRE = regexp.MustCompile(`Tried to allocate ([0-9.]+) (GiB|MiB)`)

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}
