package calibrate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

// TestRunFitsOrApplies runs the built-in Megatron benchmark three ways: fitting (a model and its leave-one-out
// cross-validation, every row corrected), applying that model as a corrections file (no refit, same corrected
// figures), and fitting a single run (nothing to fit: a warning, no model).
func TestRunFitsOrApplies(t *testing.T) {
	ctx := context.Background()
	man, err := LoadManifest(filepath.Join(testutil.RepoRoot(t), "testdata", "calibration", "megatron.json"))
	if err != nil {
		t.Fatal(err)
	}
	fitted, warnings, err := Run(ctx, Plan{Name: man.Name, Specs: man.Runs, Options: Options{Jobs: 2}, Fit: true})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("fit: %v %v", err, warnings)
	}
	if fitted.Model == nil || fitted.CV == nil || fitted.Model.HeldOut == nil {
		t.Fatalf("fit: model %v, cross-validation %v", fitted.Model, fitted.CV)
	}
	if fitted.Model.HeldOut.MedianAbsPct != fitted.CV.HeldOutMedianAbsPct {
		t.Errorf("model's held-out median %g, cross-validation says %g", fitted.Model.HeldOut.MedianAbsPct, fitted.CV.HeldOutMedianAbsPct)
	}
	for _, r := range fitted.Rows {
		if r.CorrectedBytes == nil {
			t.Fatalf("row %s/%s has no corrected figure", r.ID, r.Component)
		}
	}

	applied, _, err := Run(ctx, Plan{Name: man.Name, Specs: man.Runs, Options: Options{Jobs: 2}, Corrections: fitted.Model, Fit: true})
	if err != nil {
		t.Fatal(err)
	}
	if applied.CV != nil || applied.Model != fitted.Model {
		t.Error("a given corrections model was refitted")
	}
	for i, r := range applied.Rows {
		if *r.CorrectedBytes != *fitted.Rows[i].CorrectedBytes {
			t.Errorf("row %d: corrected %d applying the model, %d when fitting it", i, *r.CorrectedBytes, *fitted.Rows[i].CorrectedBytes)
		}
	}

	one, warnings, err := Run(ctx, Plan{Name: "one", Specs: man.Runs[:1], Fit: true})
	if err != nil {
		t.Fatal(err)
	}
	if one.Model != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "1 run with a measured peak") {
		t.Errorf("one run: model %v, warnings %q", one.Model, warnings)
	}
}
