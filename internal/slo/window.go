// An LS tenant's window: what it did between two of the controller's
// samples of its block, and the judgements of it a step makes.

package slo

import (
	"math"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// win is what an LS tenant did between two samples.
type win struct {
	h    ctl.Hist      // the busy periods that ended
	span time.Duration // the time between the samples
	busy time.Duration // its busy time
	reqs uint64        // its requests begun
}

// window is what samples hold since step since (the oldest kept, where
// it is older): nothing with fewer than two samples after it.
func window(s []sample, since int) win {
	for i, x := range s {
		if x.step >= since {
			if i == len(s)-1 {
				return win{}
			}
			y := s[len(s)-1]
			w := win{h: y.h.Sub(x.h), span: y.at.Sub(x.at)}
			if y.busy >= x.busy && y.reqs >= x.reqs { // else another block, or one made afresh
				w.busy, w.reqs = y.busy-x.busy, y.reqs-x.reqs
			}
			return w
		}
	}
	return win{}
}

// rho is the share of w the tenant was busy, at most 1 (0 for no time).
func (w win) rho() float64 {
	if w.span <= 0 {
		return 0
	}
	return math.Min(1, w.busy.Seconds()/w.span.Seconds())
}

// rate is w's requests a second (0 for no time).
func (w win) rate() float64 {
	if w.span <= 0 {
		return 0
	}
	return float64(w.reqs) / w.span.Seconds()
}

// estimate is of the p99 of the tenant's requests over w, queueing
// included.
func (w win) estimate() time.Duration {
	return Estimate(w.h, w.rho())
}

// targetAt is what v's SLO holds w's estimate under: at w's rate, its
// reference no busier than the tenant was over w (TargetAt), where it
// wrote its busy time.
func (v lsView) targetAt(w win) time.Duration {
	most := 0.0
	if w.busy > 0 {
		most = w.rho()
	}
	return TargetAt(v.Tide.SLO, v.ref, w.rate(), most)
}

// last is what v did in its newest step (nothing with one sample).
func (v lsView) last() win {
	if len(v.samples) < 2 {
		return win{}
	}
	return window(v.samples, v.samples[len(v.samples)-2].step)
}

// active is whether v has begun a request or ended a period within its
// quiet time, the longer of QuietSteps steps of every and QuietGaps of its
// mean gaps between requests over its window up to the last (at a Poisson
// rate a gap that long comes once in e^QuietGaps, about 3,000, gaps). A
// tenant that has not, with no period in flight, has gone quiet: its GPU's
// BE tenants get level 1 until it is busy again, then the level it had.
func (v lsView) active(every time.Duration) bool {
	s := v.samples
	j := len(s) - 1 // the newest step that saw it do something
	for j > 0 && s[j].h.Count() == s[j-1].h.Count() && s[j].reqs == s[j-1].reqs {
		j--
	}
	if j == 0 {
		return false
	}
	quiet := QuietSteps * every
	if r := window(s[:j+1], 0).rate(); r > 0 {
		quiet = max(quiet, time.Duration(QuietGaps/r*float64(time.Second)))
	}
	return s[len(s)-1].at.Sub(s[j].at) < quiet
}

// recent is what v did in its newest BacklogSteps steps (nothing with
// fewer).
func (v lsView) recent() win {
	if len(v.samples) <= BacklogSteps {
		return win{}
	}
	return window(v.samples, v.samples[len(v.samples)-1-BacklogSteps].step)
}
