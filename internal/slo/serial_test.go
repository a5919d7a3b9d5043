// Tests of the SLO controller on the plant's serial server (plant_test.go),
// an LS tenant that serves one request at a time, each its own busy
// period: what it holds sees the queue the busy periods miss. Each runs
// on several seeds of the server's arrivals and service times.

package slo_test

import (
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
// is within over times sloMax and each window's within twice that, and
// that the BE keeps a share of at least least. The controller holds an
// estimate (slo.Estimate) under the SLO, which a steady queue's p99 is a
// little under; the requests' p99 runs above it while the BE's share
// swings (rho from about 0.77 to 0.87 on this server) and the queue
// built while it was too high drains: 0.9 to 2.7 times the SLO over 10 s
// on these seeds, so over is 3, where the busy-period law's requests'
// p99 is over a hundred times the SLO.
func holds(t *testing.T, p *plant, v *serial, sloMax time.Duration, n int, least float64) {
	t.Helper()
	const over = 3
	lowest := 1.0
	for range n {
		p.run(1)
		share, _ := p.dials()
		lowest = min(lowest, share)
		if got := v.p99(window); got > 2*over*sloMax {
			t.Fatalf("step %d: the window's requests' p99 %v, SLO %v; busy periods' p99 %v, BE share %g",
				p.step, got, sloMax, v.busyP99(window*serialRate/10), share)
		}
	}
	if got := v.p99(n); got > over*sloMax || lowest < least {
		t.Fatalf("to step %d: requests' p99 %v, SLO %v; lowest BE share %g (want at least %g)", p.step, got, sloMax, lowest, least)
	}
}

// TestSerialQueueSeen: at 70% busy alone, a BE that asked all would keep
// every busy period short while requests queue without bound on the
// server; the controller keeps the queue bounded, the requests' p99 near
// the SLO (holds), and gives the BE what that leaves.
func TestSerialQueueSeen(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Max: 15 * time.Millisecond}, serialBase, serialK, serialRate, seed)
		p.addBE(1, serialQueue)
		p.run(50)
		holds(t, p, v, 15*time.Millisecond, 100, 0)
	}
}

// TestSerialMultipleOfAlone: "2x" holds the requests' p99 near twice
// what it was alone at the same rate (holds).
func TestSerialMultipleOfAlone(t *testing.T) {
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Alone: 2}, serialBase, serialK, serialRate, seed)
		p.run(50) // alone
		alone := v.p99(50)
		p.addBE(1, serialQueue)
		p.run(50)
		w, ok := p.c.View(slo.Key{PID: v.pid})
		if !ok || w.Target == 0 || w.Estimate == 0 || w.Utilization < 0.6 {
			t.Fatalf("view %+v, %v: want a target, an estimate and the utilization", w, ok)
		}
		holds(t, p, v, 2*alone, 100, 0)
	}
}

// TestSerialLoadStep: from 25% of the server's capacity to 75% and back,
// the requests' p99 is back near the SLO (holds) within two seconds of
// each step; the BE gets less at 75% and more again at 25%.
func TestSerialLoadStep(t *testing.T) {
	const sloMax = 15 * time.Millisecond
	for _, seed := range seeds {
		p := newPlant(t)
		v := p.addSerial(ctl.SLO{Max: sloMax}, serialBase, serialK, 250, seed)
		p.addBE(1, serialQueue)
		p.run(50)
		holds(t, p, v, sloMax, 50, 0.5)
		low, _ := p.dials()
		v.load(750)
		p.run(20)
		holds(t, p, v, sloMax, 50, 0)
		high, _ := p.dials()
		v.load(250)
		p.run(20)
		holds(t, p, v, sloMax, 50, 0.5)
		if again, _ := p.dials(); high >= low || again <= high {
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
	for i := 0; ; i++ {
		if s := be.Snapshot(); s.Tide.Share == 1 && s.Tide.Queue == serialQueue {
			break
		}
		if i == 10 {
			t.Fatalf("a second after the server went idle: %+v", be.Snapshot().Tide)
		}
		p.run(1)
	}
}
