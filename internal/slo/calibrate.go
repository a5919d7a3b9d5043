// The SLO controller's calibration: the reference of a multiple SLO
// (ctl.SLO.Alone) of an LS tenant, its periods with the GPU's BE tenants
// held, made when the tenant first has periods, and again when it is
// stale (of its warm-up: stale). The controller holds the GPU's BE tenants at level 0 while
// the tenant has periods, and pauses them too (ctl.Handle.Pause: no BE
// launch, LS work in flight or not, renewed each step and ended once the
// calibration is made), and keeps the periods of the steps that were at
// level 0 from end to end: those are alone ones. At level 0 alone a BE
// runs while no LS work is in flight, and a request that comes then waits
// for the rest of its kernel: on the plant with a BE kernel of a
// request's length, such a calibration's estimate was 1.2 to 2 times the
// alone one (TestCalibrationPausesBE); on the H100 a BE-first LS's 2x
// target averaged 24 ms where twice its requests' p99 alone was 9.2.

package slo

import (
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

// reference is the histogram v's multiple SLO is a multiple of, and
// whether it is the controller's calibration (always, for a multiple):
// the calibration, where it has AloneMin periods and is not stale (or was
// made in the last RecalibrateSteps); else the calibration under way
// (calibrating), to which it first adds v's newest step where every GPU
// of v was at level 0 at both its ends (at this step, by above, and at
// the last, by c.zero): its BE tenants were held from before the step's
// periods began to after they ended. A stale calibration is made anew,
// at most once in RecalibrateSteps. The block's alone periods are not
// used: a period counts alone there when no BE launched during it, but a
// BE kernel launched before it may run beside it all through, and on the
// GPU a 2x target of them grew from 17 to 72 ms while the BE ran (the
// requests' p99 alone 4.4 ms; results/h100-580.159.04-2026-11-27/slo-final/),
// where a calibration of the same pair held 2.2x.
func (c *Controller) reference(k string, v lsView, above map[string]bool) (ref ctl.Hist, calibrating, calibrated bool) {
	if v.Tide.SLO.Alone == 0 {
		delete(c.cal, k)
		return ctl.Hist{}, false, false
	}
	n := len(v.samples)
	held := n > 1 && v.samples[n-2].step == c.step-1
	for _, name := range gpusOf(v.Entry) {
		held = held && !above[name] && c.zero[name]
	}
	cal := c.cal[k]
	cal.held++ // steps in a row held
	if !held {
		cal.held = 0
	}
	now := window(v.samples, 0).h
	if cal.h.Count() >= AloneMin {
		if !stale(cal.h, now, cal.held >= WindowSteps) || c.step-cal.done < RecalibrateSteps {
			c.cal[k] = cal
			return cal.h, false, true
		}
		cal = calibration{held: cal.held}
	}
	if held {
		cal.h = add(cal.h, v.last().h)
		cal.done = c.step
	}
	c.cal[k] = cal
	return cal.h, cal.h.Count() < AloneMin, cal.h.Count() >= AloneMin
}

// calibration is an LS tenant's calibration: its periods, the step that
// last added to them, and the steps in a row its GPUs have been at level
// 0 (held).
type calibration struct {
	h    ctl.Hist
	done int
	held int
}

// stale says whether a reference of alone periods is not of the service
// the window's periods now are: its median or its p99 is more than
// StaleRatio times theirs (with AloneMin of them), where periods beside a
// BE are never shorter than alone; or, where the window's periods are
// alone ones too (alone: its BE tenants held at level 0 all through it),
// theirs more than StaleRatio times its. A calibration made while the
// tenant warmed up is of its eager passes, cuDNN's autotuning and a
// graph's capture: on the GPU, 2x targets of them were 21 to 953 ms where
// the requests' p99 alone was 4.6 (results/h100-580.159.04-2026-11-27/slo-trace/);
// or of its small kernels only, and a 2x target of them was 1.4 ms, which
// held the BE at level 0 throughout (slo-final/).
func stale(ref, now ctl.Hist, alone bool) bool {
	if now.Count() < AloneMin {
		return false
	}
	off := func(q float64) bool {
		r, w := float64(ref.Quantile(q)), float64(now.Quantile(q))
		return r > StaleRatio*w || alone && w > StaleRatio*r
	}
	return off(0.5) || off(quantile)
}

// add is the periods of a and b together.
func add(a, b ctl.Hist) ctl.Hist {
	for i, n := range b.Counts {
		a.Counts[i] += n
	}
	a.Sum += b.Sum
	return a
}
