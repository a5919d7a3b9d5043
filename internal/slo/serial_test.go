// Tests of the SLO controller on the plant's serial server (plant_test.go),
// an LS tenant that serves one request at a time, each its own busy
// period: what it holds sees the queue the busy periods miss. Each runs
// on several seeds of the server's arrivals and service times.

package slo_test

import (
	"math"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

// The serial server's mean service alone (about what efficientnet_b0
// takes on an H100), how much longer at a BE share of 1, the BE's queue,
// and the arrivals a second that keep it 70% busy alone.
const (
	serialBase  = time.Millisecond
	serialK     = 0.5
	serialQueue = 300 * time.Microsecond
	serialRate  = 700
)

var seeds = []uint64{1, 2, 3, 4, 5}

// holds checks, over the next n steps, that v's requests' p99 over them
// is within Over times the SLO, the mean over the steps of what slo
// returns (a time's, or the controller's target for a multiple), and
// each window's within WindowOver times it, and that the BE's mean share
// over them is at least least; it logs the p99 over the SLO and the BE's
// mean share (go test -v). The controller aims the estimate
// (slo.Estimate) at slo.Aim of the target through the server's
// utilization; the requests' p99 over 10 s lands at 0.69 to 1.00 times
// a 15 ms SLO on these seeds, where the law that halved the level over
// the SLO and raised it under let it swing, and the p99 with it: 0.87 to
// 1.76 times.
func holds(t *testing.T, p *plant, v *serial, slo func() time.Duration, n int, least float64) (share float64) {
	t.Helper()
	const over, windowOver = 1.2, 2
	var sum time.Duration
	for range n {
		p.run(1)
		s, _ := p.dials()
		share += s / float64(n)
		sum += slo()
		if got := v.p99(window); got > windowOver*slo() {
			t.Fatalf("step %d: the window's requests' p99 %v, SLO %v; busy periods' p99 %v, BE share %g",
				p.step, got, slo(), v.busyP99(window*serialRate/10), s)
		}
	}
	mean := sum / time.Duration(n)
	got := v.p99(n)
	t.Logf("to step %d: requests' p99 %v, %.2f times the SLO %v; BE share %.3f", p.step, got, float64(got)/float64(mean), mean, share)
	if got > time.Duration(over*float64(mean)) || share < least {
		t.Fatalf("to step %d: requests' p99 %v, SLO %v; BE's mean share %g (want at least %g)", p.step, got, mean, share, least)
	}
	return share
}

// fixed is an SLO of d.
func fixed(d time.Duration) func() time.Duration {
	return func() time.Duration { return d }
}

// TestSerialQueueSeen: at 70% busy alone, a BE that asked all would keep
// every busy period short while requests queue without bound on the
// server; the controller keeps the requests' p99 within the SLO (holds),
// and gives the BE what that leaves.
func TestSerialQueueSeen(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Max: 15 * time.Millisecond}, serialBase, serialK, serialRate, seed)
		p.addBE(1, serialQueue)
		p.run(50)
		holds(t, p, v, fixed(15*time.Millisecond), 100, 0.04)
	}
}

// TestSerialMultipleOfAlone: "2x" with the server started before the
// BE (its block has alone periods; the controller calibrates all the
// same) holds the requests' p99 within twice the estimate alone at the
// window's rate (holds, against the controller's target: twice the
// requests' p99 alone, 6.0 to 9.1 ms over these seeds' 5 s alone, varies
// more than the estimate does), with the BE at a share of 0.05 or more
// (0.08 to 0.14 on these seeds: the target, twice an estimate alone that
// no longer overstates the queue, is tighter than it was at 0.12 to 0.16).
func TestSerialMultipleOfAlone(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Alone: 2}, serialBase, serialK, serialRate, seed)
		p.run(50) // alone
		alone := v.p99(50)
		p.addBE(1, serialQueue)
		p.run(50)
		w, ok := p.c.View(slo.Key{PID: v.pid})
		if !ok || w.Target == 0 || w.Estimate == 0 || w.Utilization < 0.6 || w.Calibrating || !w.Calibrated {
			t.Fatalf("view %+v, %v: want a target of a calibration, an estimate and the utilization", w, ok)
		}
		if w.Target < alone*3/2 || w.Target > 4*alone {
			t.Fatalf("target %v, the requests' p99 alone %v: want twice an estimate near it", w.Target, alone)
		}
		target := func() time.Duration {
			w, _ := p.c.View(slo.Key{PID: v.pid})
			return w.Target
		}
		holds(t, p, v, target, 100, 0.05)
	}
}

// TestSerialLoadStep: from 25% of the server's capacity to 75% and back,
// the requests' p99 is within the SLO (holds) from two seconds after each
// step on; the BE gets nearly all at 25%, less at 75%, and all again.
func TestSerialLoadStep(t *testing.T) {
	const sloMax = 15 * time.Millisecond
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Max: sloMax}, serialBase, serialK, 250, seed)
		p.addBE(1, serialQueue)
		p.run(50)
		low := holds(t, p, v, fixed(sloMax), 50, 0.95)
		v.load(750)
		p.run(20)
		high := holds(t, p, v, fixed(sloMax), 50, 0.002)
		v.load(250)
		p.run(20)
		if again := holds(t, p, v, fixed(sloMax), 50, 0.95); high >= low/10 || again <= high {
			t.Errorf("seed %d: BE share %g at 25%%, %g at 75%%, %g at 25%% again", seed, low, high, again)
		}
	}
}

// TestSerialIdleReleases: within a second of the server's last request,
// the BE has a share of 1 and the queue it asked.
func TestSerialIdleReleases(t *testing.T) {
	p := newPlant(t)
	v := p.addSerial(ctl.SLO{Max: 15 * time.Millisecond}, serialBase, serialK, serialRate, 1)
	be := p.addBE(1, serialQueue)
	p.run(50)
	if share, _ := p.dials(); share >= 1 {
		t.Fatalf("busy server: BE share %g", share)
	}
	v.load(0)
	released(t, p, be, serialRate)
}

// released runs the plant until be has a share of 1 and the queue it
// asked (serialQueue), and fails if that takes more than one step (the
// request in flight) past the quiet a server at rate requests a second is
// judged by: slo.QuietSteps steps, or slo.QuietGaps of its mean gaps (300
// ms at serialRate, 500 at 20 a second).
func released(t *testing.T, p *plant, be *ctl.Handle, rate float64) {
	t.Helper()
	quiet := max(slo.QuietSteps, int(math.Ceil(slo.QuietGaps/rate/slo.DefaultInterval.Seconds())))
	for i := 0; ; i++ {
		if s := be.Snapshot(); s.Tide.Share == 1 && s.Tide.Queue == serialQueue {
			return
		}
		if i == quiet+1 {
			t.Fatalf("%d steps after the server went idle: %+v", i, be.Snapshot().Tide)
		}
		p.run(1)
	}
}

// TestSerialSparseNotReleased: a server whose requests come further apart
// than slo.QuietSteps (20 a second, each 20 ms: an LLM's decode) is not
// taken for quiet between them: its BE is never given level 1 while it
// serves, which one taken quiet after QuietSteps alone would be about
// once in 50 gaps.
func TestSerialSparseNotReleased(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		p.addSerial(ctl.SLO{Max: 40 * time.Millisecond}, 20*time.Millisecond, serialK, 20, seed)
		p.addBE(1, serialQueue)
		p.run(50)
		released := 0
		for range 300 {
			p.run(1)
			if share, _ := p.dials(); share == 1 {
				released++
			}
		}
		if released > 0 {
			t.Errorf("seed %d: BE share 1 at %d of 300 steps while the server served", seed, released)
		}
	}
}

// TestSerialWarmReference: "2x" on a server at 80% of its capacity whose
// first second's requests take 15% longer (warming up; too little for
// the calibration to be stale), calibrated then. With the reference's
// queue at most RefBusy busy (TargetAt), the target is 1.9 to 3.2 times
// the requests' p99 alone on these seeds; bounded only by the utilization
// the server serves at, 3.1 to 5.6 times, and unbounded 5.9 to 12.5. The
// rest is the reference's own: its periods are longer.
func TestSerialWarmReference(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Alone: 2}, serialBase, serialK, 800, seed)
		v.warm, v.warmBy = time.Second, 1.15
		p.run(50)
		alone := v.p99(30)
		p.addBE(1, serialQueue)
		p.run(150)
		w, _ := p.c.View(slo.Key{PID: v.pid})
		if !w.Calibrated || w.Target > 7*alone/2 {
			t.Errorf("seed %d: view %+v; the requests' p99 alone %v: want a target under 3.5 times it", seed, w, alone)
		}
	}
}

// TestSerialCrowdedPauses: "2x" on a server at 78% of its capacity, where
// a request that finds it idle waits the rest of a BE kernel as long as a
// request (plant.idle): the law holds the level at the bottom, flicking
// between 0 and MinShare, and a BE at either runs in every idle gap. A
// server busier than slo.RefBusy with its estimate over slo.Aim of its
// target (crowded), or the law lowering still, after slo.ZeroSteps steps
// under slo.Bottom, has its BE paused, and a pause that comes back each
// few steps is held longer each time (slo.Relapse): 132 to 186 of 200
// steps on these seeds; 59 to 98 where the law lifts the level while the
// pause is held (it is let go as the level leaves the bottom), 60 to 84
// with each pause held only while asked, 40 to 62 by the law's lowering
// alone, 23 to 43 counting the steps at 0 only (a step at MinShare
// between resets the count), 16 to 30 by neither. The requests' p99 over
// them stays under the target.
func TestSerialCrowdedPauses(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		p.idle = serialBase
		v := p.addSerial(ctl.SLO{Alone: 2}, serialBase, serialK, 780, seed)
		p.run(50)
		p.addBE(1, serialQueue)
		p.run(50)
		paused := 0
		for range 200 {
			p.run(1)
			if p.paused() {
				paused++
			}
		}
		w, _ := p.c.View(slo.Key{PID: v.pid})
		t.Logf("seed %d: BE paused %d of 200 steps; the requests' p99 %v, target %v", seed, paused, v.p99(200), w.Target)
		if paused < 110 || !w.Calibrated || v.p99(200) > w.Target {
			t.Errorf("seed %d: BE paused %d of 200 steps, want 110 or more; the requests' p99 %v, view %+v", seed, paused, v.p99(200), w)
		}
	}
}
