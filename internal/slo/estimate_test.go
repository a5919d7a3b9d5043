// Tests of the estimate of an LS tenant's requests' p99 (Estimate) and of
// a multiple's target (TargetAt): a few periods far longer than the rest,
// as an LS tenant's warm-up leaves among its alone periods, move neither.

package slo_test

import (
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

// periods is a histogram of n periods of each length given.
func periods(lengths map[time.Duration]uint64) ctl.Hist {
	var h ctl.Hist
	for d, n := range lengths {
		for i := range ctl.HistBuckets {
			if i == ctl.HistBuckets-1 || d < ctl.HistBound(i) {
				h.Counts[i] += n
				break
			}
		}
		h.Sum += time.Duration(n) * d
	}
	return h
}

func TestEstimateIgnoresWarmUp(t *testing.T) {
	served := map[time.Duration]uint64{900 * time.Microsecond: 1500, 1100 * time.Microsecond: 1500}
	clean := periods(served)
	served[200*time.Millisecond] = 20 // the warm-up's
	warm := periods(served)
	for _, rho := range []float64{0.3, 0.55, 0.8} {
		a, b := slo.Estimate(clean, rho), slo.Estimate(warm, rho)
		if b > a*11/10 || b < a*9/10 {
			t.Errorf("at rho %g: estimate %v with the warm-up's periods, %v without: want within 10%%", rho, b, a)
		}
	}
	// the requests' p99 of a server of 1 ms periods at 540/s is a few ms
	if got := slo.Estimate(clean, 0.54); got < 2*time.Millisecond || got > 6*time.Millisecond {
		t.Errorf("estimate at rho 0.54 of 1 ms periods: %v, want 2-6 ms", got)
	}
	s := ctl.SLO{Alone: 2}
	a, b := slo.TargetAt(s, clean, 540), slo.TargetAt(s, warm, 540)
	if b > a*11/10 || b < a*9/10 {
		t.Errorf("2x target at 540/s: %v with the warm-up's alone periods, %v without: want within 10%%", b, a)
	}
}
