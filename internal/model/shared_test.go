// Tests of shared.go: co-run predictions under a shared bandwidth, and its
// fit to measured groups.

package model

import (
	"math"
	"testing"
)

func TestPredictShared(t *testing.T) {
	// Two copies of the memory kernel on 5 SMs: 70.83 GB/s each, the pull
	// of 5 SMs, so m = 1. With B = 100 GB/s they are slowed by D/B =
	// 1.4167 together: both end at 1.2 * 1.4167 = 1.7 ms.
	pull := map[int]float64{5: 85.0 / 1.2}
	got, err := PredictShared([]Placement{{memory, 5}, {memory, 5}}, pull, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if !near(v, 1.7) {
			t.Errorf("co-run %g, want 1.7", v)
		}
	}
	// Beside a compute kernel (0.5 GB/s on 5 SMs, m = 0.0071) nothing
	// exceeds B: each runs its time alone.
	got, _ = PredictShared([]Placement{{compute, 5}, {memory, 5}}, pull, 100)
	if !near(got[0], 2.0) || !near(got[1], 1.2) {
		t.Errorf("compute beside memory: %v, want [2 1.2]", got)
	}
	// With B = 50: D = 71.33, over = 1.4267 while both run. memory (m = 1)
	// runs at 1/(1.2 * 1.4267) and ends at 1.712 ms; compute (m = 0.5/70.83)
	// is slowed by 1 + 0.00706 * 0.4267 = 1.00301 until then, then runs alone.
	got, _ = PredictShared([]Placement{{compute, 5}, {memory, 5}}, pull, 50)
	over := (0.5 + 85.0/1.2) / 50
	endMem := 1.2 * over
	slow := 1 + (0.5/(85.0/1.2))*(over-1)
	doneCompute := endMem / (2.0 * slow)
	if !near(got[1], endMem) || !near(got[0], endMem+(1-doneCompute)*2.0) {
		t.Errorf("B = 50: %v, want [%g %g]", got, endMem+(1-doneCompute)*2.0, endMem)
	}
	if _, err := PredictShared([]Placement{{memory, 5}}, pull, 0); err == nil {
		t.Error("B = 0 accepted")
	}
}

func TestFitSharedBW(t *testing.T) {
	// Groups measured as if B were 60 GB/s: the fit finds about that.
	pull := map[int]float64{5: 85.0 / 1.2}
	ps := []Placement{{memory, 5}, {memory, 5}}
	truth, _ := PredictShared(ps, pull, 60)
	b, mae, err := FitSharedBW([]Observed{{ps, truth}}, pull, 100)
	if err != nil || math.Abs(b-60) > 0.6 || mae > 0.01 {
		t.Errorf("fit B = %g (MAE %g), want 60: %v", b, mae, err)
	}
	if _, _, err := FitSharedBW(nil, pull, 100); err == nil {
		t.Error("fit without data succeeded")
	}
}
