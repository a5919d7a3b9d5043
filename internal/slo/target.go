// An LS tenant's target, what its SLO holds its estimate under, and its
// attainment against it.

package slo

import (
	"math"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Target is TargetAt with no queue (a request rate of 0): a time, or a
// multiple of the p99 of the alone periods, which needs AloneMin of them;
// 0 for none yet, or no SLO. The controller uses it only to tell whether
// an SLO resolves; it holds the estimate under TargetAt, at the window's
// rate.
func Target(s ctl.SLO, alone ctl.Hist) time.Duration {
	return TargetAt(s, alone, 0, 0)
}

// TargetAt is what s holds the estimate of an LS tenant's requests' p99
// under at rate requests a second: a time, or a multiple of its estimate
// alone at that rate (Estimate of the alone periods, rho rate times their
// mean, but at most RefBusy, and at most most where most is above 0),
// which needs AloneMin of them. 0 for none yet, or no SLO. The
// controller's most is the tenant's utilization over the window
// (targetAt): alone it is no busier than beside the BE tenants. Near
// saturation the estimate of a queue swings with a few percent of its
// periods' mean (at 0.92 busy it is over twice what it is at 0.8), and a
// reference a little longer than what the tenant serves now (made while
// it warmed up, shorter than StaleRatio, or its periods' mean read from
// their buckets) set a target of a queue that is not there: on the H100
// at 810/s (75% of capacity) an LS started beside a running BE had 2x
// targets of 41 to 266 ms where twice its requests' p99 alone was 17 ms
// (results/h100-580.159.04-2026-11-27, slo-marks/). So a tenant served
// past RefBusy of its capacity alone gets a target below the multiple of
// its p99 alone, and its BE tenants less: an SLO near saturation is kept
// first.
func TargetAt(s ctl.SLO, alone ctl.Hist, rate, most float64) time.Duration {
	var ref time.Duration
	if alone.Count() >= AloneMin {
		_, _, mean := served(alone)
		rho := math.Min(rate*mean, RefBusy)
		if most > 0 {
			rho = math.Min(rho, most)
		}
		ref = Estimate(alone, rho)
	}
	target, _ := s.Of(ref)
	return target
}

// Attainment is the share of the busy periods h within target (1 with
// no period); ok is false where there is no target (no SLO, or a
// multiple not calibrated yet), the share then 1. carve ls and top (over
// a tenant's life, or top's interval, against Shown) and
// carve_ls_slo_attainment (over the controller's window) all say it.
func Attainment(h ctl.Hist, target time.Duration) (share float64, ok bool) {
	if target <= 0 {
		return 1, false
	}
	return h.Within(target), true
}

// Shown is the target an LS tenant's periods are judged against outside
// the controller (carve ls, top), of its SLO s and the target the
// controller last wrote in its block (written, ctl.TideStatus.SLOTarget):
// a time's is the time; a multiple's is the controller's (0: none yet, or
// no controller), which only it can know (its calibration).
func Shown(s ctl.SLO, written time.Duration) time.Duration {
	if s.Max > 0 {
		return s.Max
	}
	if s.Alone > 0 {
		return written
	}
	return 0
}
