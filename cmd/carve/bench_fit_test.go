// Tests of carve bench fit, on the co-runs recorded on the H100.

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/evaluate"
)

// TestFitRecorded fits carve's model to the recorded co-runs of seed 1 and
// checks it on the held-out seed 2: DESIGN's target is at most 8% mean
// absolute error.
func TestFitRecorded(t *testing.T) {
	sandbox(t)
	dir := t.TempDir()
	profiles := copyDir(t, filepath.Join(recorded, "profiles")) // fit writes its calibration beside them
	_, _, err := carve(t, "bench", "fit", "--profiles", profiles, "--out", dir,
		filepath.Join(recorded, "eval-seed1", "evaluation.json"), filepath.Join(recorded, "eval-seed2", "evaluation.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate.Load(filepath.Join(dir, "heldout-eval-seed2", "evaluation.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ev.Summary {
		t.Logf("%s: %.1f%% mean absolute error over %d runs", s.Model, 100*s.MAE, s.N)
		if s.Model == "carve" && (s.N < 400 || s.MAE > 0.08) {
			t.Errorf("carve's model on held-out co-runs: %.1f%% over %d runs, want at most 8%%", 100*s.MAE, s.N)
		}
	}
	if ev.FittedOn == "" || ev.GPU.SharedBW <= 0 || ev.Calibration != filepath.Join(dir, "calibration.json") {
		t.Errorf("the held-out evaluation does not say what it was fitted on: %+v, calibration %q", ev.GPU, ev.Calibration)
	}
	// predict takes the calibration written beside the profiles by default
	out, _, err := carve(t, "predict", "--profiles", profiles, "vadd:22", "saxpy:22")
	if err != nil || !strings.Contains(out, "calibration "+filepath.Join(profiles, "calibration.json")) ||
		!strings.Contains(out, fmt.Sprintf("sharing %.0f GB/s", ev.GPU.SharedBW)) {
		t.Errorf("predict without --calibration beside a fitted one: %v\n%s", err, out)
	}
}
