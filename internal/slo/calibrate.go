// The SLO controller's calibration: the reference of a multiple SLO
// (ctl.SLO.Alone) for an LS tenant whose block has fewer than AloneMin
// alone periods, as when a BE tenant ran steadily on its GPU from before
// it started. The controller holds the GPU's BE tenants at level 0 while
// the tenant has periods, and keeps the periods of the steps that were at
// level 0 from end to end: at share 0 a BE runs only while no LS work is
// in flight, and has at most QueueMin of its work queued when an LS
// request comes, so those periods are alone ones and up to QueueMin
// longer. The calibration counts each QueueMin shorter in its sum (the
// mean period, of which the estimate's utilization is), not in its
// buckets: a BE that ran steadily has about that queued at each request
// (on the plant, QueueMin is 5% of a request, and at 70% busy would make
// the estimate 16% longer than alone).

package slo

import (
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// aboveZero is the GPUs on which a BE tenant of all is above level 0 (a
// share over 0, or a queue over QueueMin), as the blocks read now.
func aboveZero(all []tenant) map[string]bool {
	above := map[string]bool{}
	for _, t := range all {
		if t.Class == ctl.ClassBE && (t.Tide.Share > 0 || t.Tide.Queue > QueueMin) {
			for _, name := range gpusOf(t.Entry) {
				above[name] = true
			}
		}
	}
	return above
}

// reference is the histogram v's multiple SLO is a multiple of, kept by
// the LS block k: the block's alone periods, where it has AloneMin of
// them; else the controller's calibration, to which it first adds v's
// newest step where every GPU of v was at level 0 at both its ends (at
// this step, by above, and at the last, by c.zero): its BE tenants were
// held from before the step's periods began to after they ended. While
// the calibration has fewer than AloneMin periods, v is calibrating.
func (c *Controller) reference(k string, v lsView, above map[string]bool) (ref ctl.Hist, calibrating bool) {
	alone := v.TideStatus.Alone
	if v.Tide.SLO.Alone == 0 || alone.Count() >= AloneMin {
		delete(c.cal, k)
		return alone, false
	}
	cal := c.cal[k]
	n := len(v.samples)
	held := n > 1 && v.samples[n-2].step == c.step-1
	for _, name := range gpusOf(v.Entry) {
		held = held && !above[name] && c.zero[name]
	}
	if held {
		h := v.last().h
		h.Sum = max(0, h.Sum-time.Duration(h.Count())*QueueMin)
		cal = add(cal, h)
		c.cal[k] = cal
	}
	return cal, cal.Count() < AloneMin
}

// add is the periods of a and b together.
func add(a, b ctl.Hist) ctl.Hist {
	for i, n := range b.Counts {
		a.Counts[i] += n
	}
	a.Sum += b.Sum
	return a
}
