package calibrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// TestCalibrateNamesLeak: a run whose logits are kept from every step leaks 512 MiB an iteration; calibrating a
// configuration against it names the leak (the site and its growth, as analyze's leak finding does) and keeps the
// run out of the fitted corrections unless asked. The same run without the leak gets no such note and is fitted.
func TestCalibrateNamesLeak(t *testing.T) {
	cfg, err := static.ParseConfig([]byte(oomConfig), false)
	if err != nil {
		t.Fatal(err)
	}
	run := func(keep bool) *calibrate.Calibration {
		c := traingen.TrainingLoop{Iterations: 4, Layers: 4, WeightBytes: 64 << 20, ActivationBytes: 256 << 20, LogitsBytes: 512 << 20,
			Annotations: true, Keep: keep}
		rep, err := analyze.Analyze(context.Background(), &load.Input{Path: "run.pickle", Format: "pickle-v4", Snapshot: c.Build()}, analyze.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := calibrate.EvaluateReports("run", *cfg, "worst", []*report.Report{rep}, calibrate.Measured{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &calibrate.Calibration{Runs: []*calibrate.RunResult{res}}
	}
	leaking := run(true)
	notes := strings.Join(leaking.Runs[0].Notes, "\n")
	if want := "/home/user/proj/model.py:85:forward (Activation) grows by " + units.Bytes(512<<20) + " per iteration over 4 iterations"; !strings.Contains(notes, "leak") || !strings.Contains(notes, want) {
		t.Errorf("notes do not name the leak %q: %s", want, notes)
	}
	if n := len(leaking.Samples(false)); n != 0 {
		t.Errorf("%d leaking samples fitted by default", n)
	}
	if n := len(leaking.Samples(true)); n != 1 {
		t.Errorf("%d samples when asked to fit leaking runs, want 1", n)
	}
	healthy := run(false)
	if notes := strings.Join(healthy.Runs[0].Notes, "\n"); strings.Contains(notes, "leak") || len(healthy.Samples(false)) != 1 || healthy.Runs[0].Measured.Leak != "" {
		t.Errorf("a run without a leak: notes %q, %d samples", notes, len(healthy.Samples(false)))
	}
}
