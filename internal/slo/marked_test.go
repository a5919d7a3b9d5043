// Tests of the SLO controller on a serial server whose queued requests
// merge into one busy period half the time, as the shim's poller sees a
// program that launches its next request as its last ends: judged by its
// busy periods, or by its requests as it marks them (ctl.Policy.Mark).

package slo_test

import (
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

// merged is the chance, in these tests, that a request begun as the last
// ended continues its busy period.
const merged = 0.5

// mergedServer adds a serial server at 70% of its capacity with SLO s
// whose queued requests' periods merge, marking its requests where mark.
func mergedServer(p *plant, s ctl.SLO, mark bool, seed uint64) *serial {
	pol := ctl.Policy{Class: ctl.ClassLS, SLO: s}
	if mark {
		pol.Mark = "request"
	}
	v := p.addServer(pol, serialBase, serialK, serialRate, seed)
	v.merge = merged
	return v
}

// TestSerialMarkedTime: a 15 ms SLO on a server whose periods merge. Judged
// by its periods, whose p99 holds runs of requests, the estimate
// overstates its requests' p99 and the BE gets almost nothing (a share
// of 0.000 to 0.001 on these seeds, the requests' p99 at 0.49 to 0.60 of
// the SLO); judged by its marked requests, the controller holds the SLO
// (holds; the p99 at 0.62 to 0.88 of it) with the BE at 0.046 to 0.080.
func TestSerialMarkedTime(t *testing.T) {
	const sloMax = 15 * time.Millisecond
	for _, seed := range seeds {
		share := map[bool]float64{}
		for _, mark := range []bool{false, true} {
			p := newPlant(t)
			v := mergedServer(p, ctl.SLO{Max: sloMax}, mark, seed)
			p.addBE(1, serialQueue)
			p.run(50)
			least := 0.0
			if mark {
				least = 0.04
			}
			share[mark] = holds(t, p, v, fixed(sloMax), 100, least)
			if w, _ := p.c.View(slo.Key{PID: v.pid}); w.Marked != mark {
				t.Errorf("seed %d: the view says marked %v, want %v", seed, w.Marked, mark)
			}
		}
		if share[false] > share[true]/2 {
			t.Errorf("seed %d: the BE's share %g judged by busy periods, %g by marked requests: want less than half", seed, share[false], share[true])
		}
	}
}

// TestSerialMarkedMultiple: "2x" on a server whose periods merge, judged
// by its marked requests: its calibration is of its requests alone, so
// the target is near twice their p99 alone (judged by its periods it was
// 26 to 69 ms on these seeds, where twice the requests' p99 alone is 12 to
// 18; by them 14 to 18), and the controller holds it (the requests' p99
// at 0.59 to 1.02 of it) with the BE at 0.078 to 0.143.
func TestSerialMarkedMultiple(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		v := mergedServer(p, ctl.SLO{Alone: 2}, true, seed)
		p.run(50) // alone
		alone := v.p99(50)
		p.addBE(1, serialQueue)
		p.run(50)
		w, _ := p.c.View(slo.Key{PID: v.pid})
		if !w.Marked || !w.Calibrated || w.Target < alone*3/2 || w.Target > 3*alone {
			t.Fatalf("seed %d: view %+v; the requests' p99 alone %v: want a calibrated target of marked requests near twice it", seed, w, alone)
		}
		target := func() time.Duration {
			w, _ := p.c.View(slo.Key{PID: v.pid})
			return w.Target
		}
		holds(t, p, v, target, 100, 0.05)
	}
}

// TestSerialMarkedNone: a server with a mark whose program marks no
// range that matches is judged by its busy periods, as one without.
func TestSerialMarkedNone(t *testing.T) {
	p := newPlant(t)
	v := mergedServer(p, ctl.SLO{Max: 15 * time.Millisecond}, true, 1)
	v.marks = false // NVTX attached, nothing timed
	p.addBE(1, serialQueue)
	p.run(50)
	if w, ok := p.c.View(slo.Key{PID: v.pid}); !ok || w.Marked || w.Periods == 0 {
		t.Errorf("view %+v, %v: want one of busy periods", w, ok)
	}
	holds(t, p, v, fixed(15*time.Millisecond), 50, 0)
}
