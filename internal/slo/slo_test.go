// Tests of the SLO controller on the plant (plant_test.go), step by step
// on its virtual clock: it converges under the SLO and holds it through a
// load step, gives the BE its all within a second of the LS going idle,
// the tightest of two SLOs binds, no SLO writes nothing, a restarted
// controller resumes from the blocks, a multiple of the alone p99 binds
// to a calibration until the block has one, and dead or unreadable
// blocks are skipped.

package slo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

const window = slo.WindowSteps // steps

// converged checks, over the next n steps, that l's true p99 over the
// window stays under its SLO and that the BE keeps a share of at least
// least.
func converged(t *testing.T, p *plant, l *lsPlant, sloMax time.Duration, n int, least float64) {
	t.Helper()
	for range n {
		p.run(1)
		share, _ := p.dials()
		if got := l.p99(window); got > sloMax || share < least {
			t.Fatalf("step %d: window p99 %v (SLO %v), BE share %g (want at least %g)", p.step, got, sloMax, share, least)
		}
	}
}

// TestConvergesAndHoldsThroughLoadStep: from a BE that asked all, the
// controller brings the LS under its SLO within a second and keeps the BE
// a fair share; when the LS's periods grow, it is back under within a
// second, and stays.
func TestConvergesAndHoldsThroughLoadStep(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	be := p.addBE(1, 300*time.Microsecond)
	p.run(1) // the first step has no window: it holds
	if s := be.Snapshot(); s.Steered != nil || s.Tide.Share != 1 {
		t.Fatalf("first step: %+v, steered %+v; want it untouched", s.Tide, s.Steered)
	}
	for i := 0; l.p99(1) > 5*time.Millisecond; i++ {
		if i == 10 {
			t.Fatalf("still over the SLO a second on: step's p99 %v", l.p99(1))
		}
		p.run(1)
	}
	p.run(50)
	converged(t, p, l, 5*time.Millisecond, 50, 0.1)
	if s := be.Snapshot(); s.Steered == nil || *s.Steered != (ctl.Asked{Share: 1, Queue: 300 * time.Microsecond}) {
		t.Errorf("steered BE: asked %+v, want what it asked kept", s.Steered)
	}

	before, _ := p.dials()
	l.base = 3 * time.Millisecond // the load step
	p.run(10)
	if got := l.p99(1); got > 5*time.Millisecond {
		t.Fatalf("a second after the load step: step's p99 %v, over the SLO", got)
	}
	p.run(window)
	converged(t, p, l, 5*time.Millisecond, 50, 0)
	if after, _ := p.dials(); after >= before {
		t.Errorf("BE share %g after the load step, %g before: want less", after, before)
	}
}

// TestIdleLSGivesAll: once the LS has no periods for slo.QuietSteps
// steps, the BE has a share of 1 and the queue it asked by the next;
// when the LS comes back, it is held at once at the level it had (not
// brought down from 1 a step at a time, which would take it 10 steps).
func TestIdleLSGivesAll(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	be := p.addBE(0.05, 300*time.Microsecond)
	p.run(60)
	before, _ := p.dials()
	if before >= 1 {
		t.Fatalf("busy LS: BE share %g", before)
	}
	l.rate = 0
	for i := 0; ; i++ {
		if s := be.Snapshot(); s.Tide.Share == 1 && s.Tide.Queue == 300*time.Microsecond {
			break
		}
		if i == slo.QuietSteps+1 {
			t.Fatalf("%d steps after the LS went idle: %+v", i, be.Snapshot().Tide)
		}
		p.run(1)
	}
	p.run(20)
	l.rate = 40 // busy again
	p.run(1)
	if share, _ := p.dials(); share > before*slo.MaxStep {
		t.Errorf("LS busy again: BE share %g, %g before it went idle", share, before)
	}
}

// TestLongPeriodInFlightIsBusy: an LS tenant in the middle of a period
// longer than the window (none ended) is busy, not idle.
func TestLongPeriodInFlightIsBusy(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	p.addBE(1, 0)
	p.run(30)
	share, _ := p.dials()
	l.rate, l.long = 0, true
	p.run(2 * window)
	if now, _ := p.dials(); now > share {
		t.Errorf("a period in flight: BE share %g, was %g", now, share)
	}
}

// TestTightestBinds: of two LS tenants on one GPU, the one with the
// tighter SLO binds: it stays under, and the BE gets less than with the
// looser one alone.
func TestTightestBinds(t *testing.T) {
	loose := newPlant(t)
	ll := loose.addLS(ctl.SLO{Max: 10 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	loose.addBE(0.05, 300*time.Microsecond)
	loose.run(80)
	converged(t, loose, ll, 10*time.Millisecond, 20, 0.3)
	looseShare, _ := loose.dials()

	both := newPlant(t)
	l1 := both.addLS(ctl.SLO{Max: 10 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	l2 := both.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	both.addBE(0.05, 300*time.Microsecond)
	both.run(80)
	converged(t, both, l2, 5*time.Millisecond, 20, 0.05)
	converged(t, both, l1, 10*time.Millisecond, 1, 0)
	if share, _ := both.dials(); share >= looseShare {
		t.Errorf("BE share %g beside both, %g beside the looser alone: want the tighter to bind", share, looseShare)
	}
}

// TestNoSLOWritesNothing: with no SLO on any tenant, no BE block changes
// by a byte, and the block of a process that ended stays (carve ls and
// carve daemon's sweep remove it, not the controller).
func TestNoSLOWritesNothing(t *testing.T) {
	p := newPlant(t)
	p.addLS(ctl.SLO{}, 2*time.Millisecond, 4, 40)
	be := p.addBE(0.05, 300*time.Microsecond)
	dead, _, kill := p.create(ctl.Policy{Class: ctl.ClassBE, Share: 1}, node)
	kill()
	before, err := os.ReadFile(be.Path)
	if err != nil {
		t.Fatal(err)
	}
	p.run(30)
	after, _ := os.ReadFile(be.Path)
	if !bytes.Equal(before, after) {
		t.Errorf("the BE's block changed with no SLO set: %+v", be.Snapshot().Tide)
	}
	if _, err := os.Stat(dead.Path); err != nil {
		t.Errorf("the block of a process that ended: %v", err)
	}
}

// TestRestartResumes: a new controller on the same blocks leaves the BE's
// dials as the old one left them until it has a window, then holds the
// SLO from there, neither giving all back nor starting over.
func TestRestartResumes(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	p.addBE(1, 300*time.Microsecond)
	p.run(80)
	share, queue := p.dials()
	p.restart()
	p.run(1)
	if s, q := p.dials(); s != share || q != queue {
		t.Fatalf("restarted: share %g queue %v, were %g %v", s, q, share, queue)
	}
	converged(t, p, l, 5*time.Millisecond, 40, share/2)
}

// TestSLOGonePutsBack: when the LS tenant with the SLO ends, the BE gets
// back what it asked.
func TestSLOGonePutsBack(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	be := p.addBE(0.05, 300*time.Microsecond)
	p.run(30)
	if be.Snapshot().Steered == nil {
		t.Fatal("not steered")
	}
	l.kill()
	p.ls = nil
	p.run(1)
	if s := be.Snapshot(); s.Steered != nil || s.Tide.Share != 0.05 || s.Tide.Queue != 300*time.Microsecond {
		t.Errorf("SLO gone: %+v, steered %+v; want what it asked", s.Tide, s.Steered)
	}
}

// TestMultipleOfAlone: "2.5x" with a BE running from before the LS
// binds to the controller's calibration within half a second, holding
// the BE at 0 until then, and keeps it when the block then counts alone
// periods half as long again (a BE kernel launched before each ran
// beside it all through: the block's alone periods are not the
// reference).
func TestMultipleOfAlone(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Alone: 2.5}, 2*time.Millisecond, 4, 40)
	be := p.addBE(1, 300*time.Microsecond)
	p.run(2)
	if v, _ := p.c.View(slo.Key{PID: l.pid}); !v.Calibrating || v.Target != 0 || atomic.LoadUint32(&l.b.SLOTarget) != 0 {
		t.Fatalf("no alone reference: view %+v, block's target %d us; want it calibrating, none", v, l.b.SLOTarget)
	}
	if s := be.Snapshot(); s.Tide.Share != 0 || s.Tide.Queue != slo.QueueMin {
		t.Fatalf("calibrating: BE %+v, want level 0", s.Tide)
	}
	p.run(3)
	if v, _ := p.c.View(slo.Key{PID: l.pid}); v.Calibrating || !v.Calibrated || v.Target < 4*time.Millisecond || v.Target > 6500*time.Microsecond {
		t.Fatalf("half a second on: view %+v, want a target of 2.5 times about 2 ms from the calibration", v)
	}
	for range 4 * slo.AloneMin {
		record(&l.b.AloneHist, 3*time.Millisecond)
	}
	p.run(80)
	v, ok := p.c.View(slo.Key{PID: l.pid})
	if !ok || !v.Calibrated || v.Target < 4*time.Millisecond || v.Target > 6500*time.Microsecond {
		t.Fatalf("view %+v, %v; want the calibration's target of 2.5 times about 2 ms alone", v, ok)
	}
	if us := atomic.LoadUint32(&l.b.SLOTarget); time.Duration(us)*time.Microsecond != v.Target.Truncate(time.Microsecond) {
		t.Errorf("the block's target %d us, the view's %v: want the controller's written for carve ls", us, v.Target)
	}
	converged(t, p, l, v.Target, 20, 0.05)
	if v.Attainment < 0.99 || v.Periods == 0 || v.P99 > v.Target {
		t.Errorf("view %+v: want the window within its target", v)
	}
}

// TestSkipsDeadAndUnreadable: a BE that ended and a block carve cannot
// read are skipped; the live BE is steered as ever.
func TestSkipsDeadAndUnreadable(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	p.addBE(1, 300*time.Microsecond)
	_, _, kill := p.create(ctl.Policy{Class: ctl.ClassBE, Share: 1}, node)
	kill()
	if err := os.WriteFile(filepath.Join(p.dir, "4242"), []byte("not a block"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.run(60)
	converged(t, p, l, 5*time.Millisecond, 20, 0.1)
}

// TestEachGPUApart: a BE on another GPU than the LS's is not held; one on
// both takes the level of the LS's.
func TestEachGPUApart(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	other := p.addBE(1, 300*time.Microsecond, "node-B")
	p.be = p.be[:0]
	both := p.addBE(1, 300*time.Microsecond, "node-B", node)
	p.run(60)
	converged(t, p, l, 5*time.Millisecond, 20, 0.1)
	if s := other.Snapshot(); s.Steered != nil || s.Tide.Share != 1 {
		t.Errorf("BE on the other GPU: %+v, steered %+v", s.Tide, s.Steered)
	}
	if s := both.Snapshot(); s.Steered == nil || s.Tide.Share >= 1 {
		t.Errorf("BE on both GPUs: %+v", s.Tide)
	}
}

// TestTraceSaysEachStep: Trace is given the LS tenant's view after each
// step, its Level the share the step left its BE with, and View says the
// same.
func TestTraceSaysEachStep(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	p.addBE(1, 300*time.Microsecond)
	var got []slo.View
	p.c.Trace = func(k slo.Key, v slo.View) {
		if k.PID != l.pid {
			t.Errorf("traced %+v, want the LS tenant's pid %d", k, l.pid)
		}
		got = append(got, v)
	}
	lowered := false
	for i := range 30 {
		p.run(1)
		if len(got) != i+1 {
			t.Fatalf("step %d: %d views traced, want one a step", i+1, len(got))
		}
		share, _ := p.dials()
		v := got[i]
		if v.Level != share {
			t.Errorf("step %d: traced level %g, the BE's share %g", i+1, v.Level, share)
		}
		if w, ok := p.c.View(slo.Key{PID: l.pid}); !ok || w != v {
			t.Errorf("step %d: View %+v, %v; traced %+v", i+1, w, ok, v)
		}
		lowered = lowered || v.Level < 1
	}
	if !lowered {
		t.Error("the BE's level never went below 1 over the SLO: the trace says nothing of the steering")
	}
}

// TestLevelZeroPauses: an LS tenant the controller would hold further
// after its BE tenants were at the bottom (a level under slo.Bottom) for
// slo.ZeroSteps steps has them paused (no kernel in its idle time either,
// which a request that finds it idle waits the rest of: on an H200 at 75%
// of an LS's capacity the level sat at 0.01 and requests still missed),
// and the step's view says so; the pause is renewed while that lasts, and
// ends once the tenant is under its target.
func TestLevelZeroPauses(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 2 * time.Millisecond}, 2*time.Millisecond, 4, 40) // never under it
	p.addBE(1, 300*time.Microsecond)
	zero := 0
	for i := 0; zero <= slo.ZeroSteps; i++ {
		if i == 60 {
			t.Fatalf("60 steps: the BE's level not at the bottom for %d steps", slo.ZeroSteps)
		}
		if p.paused() {
			t.Fatalf("step %d: paused after %d steps at the bottom, want %d first", p.step, zero, slo.ZeroSteps)
		}
		p.run(1)
		if share, _ := p.dials(); share < slo.Bottom {
			zero++
		} else {
			zero = 0
		}
	}
	for range 2 * slo.PauseSteps {
		if v, _ := p.c.View(slo.Key{PID: l.pid}); !p.paused() || !v.Paused {
			t.Fatalf("step %d: the LS over its target at level 0 for %d steps, the BE paused %v, the view says %v", p.step, zero, p.paused(), v.Paused)
		}
		p.run(1)
	}
	l.base = 200 * time.Microsecond // well under
	p.run(slo.WindowSteps + slo.PauseSteps)
	if p.paused() {
		t.Errorf("step %d: the LS well under its target, the BE still paused", p.step)
	}
}

// TestNewLSForgetsTheOld: the level an LS tenant left its GPU's BE tenants
// at when it went quiet is not where a new LS tenant's starts once the
// first has ended (nor are its steps at 0): a new tenant with a loose SLO
// gives the BE its share at once.
func TestNewLSForgetsTheOld(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 2 * time.Millisecond}, 2*time.Millisecond, 4, 40) // held at 0
	p.addBE(1, 300*time.Microsecond)
	p.run(30)
	if share, _ := p.dials(); share != 0 {
		t.Fatalf("a tenant never under its SLO: BE share %g, want 0", share)
	}
	l.rate = 0
	p.run(slo.QuietSteps + 2) // quiet: the BE released, the level kept for its return
	l.kill()
	p.run(2)
	p.addLS(ctl.SLO{Max: time.Second}, 200*time.Microsecond, 0, 40)
	p.run(3)
	if share, _ := p.dials(); share < 1 || p.paused() {
		t.Errorf("a new LS tenant with a loose SLO: BE share %g (paused %v), want 1: the old tenant's level", share, p.paused())
	}
}

// TestCalibratingLongPeriodHolds: an LS tenant being calibrated in the
// middle of a period longer than slo.QuietSteps (none ended, none begun)
// is busy, not quiet: its BE tenants stay at level 0 until it ends.
func TestCalibratingLongPeriodHolds(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Alone: 2}, 2*time.Millisecond, 4, 2) // 2 periods a step: calibrating for 10 steps
	p.addBE(1, 300*time.Microsecond)
	p.run(3)
	if share, _ := p.dials(); share != 0 {
		t.Fatalf("calibrating: BE share %g, want 0", share)
	}
	l.rate, l.long = 0, true
	p.run(slo.QuietSteps + 3)
	if share, _ := p.dials(); share != 0 {
		t.Errorf("calibrating, a period in flight %d steps: BE share %g, want 0", slo.QuietSteps+3, share)
	}
}

// TestPauseHeldThroughEmergencies: an LS tenant far over its target at the
// bottom sets off an emergency each step it has periods, which starts its
// window afresh; a step with no period since (here every other one) holds
// the BE tenants as they are, and that keeps their pause: every step from
// the first pause says it paused them. A held step that let the pause go
// did so in every other step, and a pause lasts slo.PauseSteps intervals
// from the step that wrote it: to the next step but one, which then
// finds it ended.
func TestPauseHeldThroughEmergencies(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: time.Millisecond}, 4*time.Millisecond, 4, 4) // never under it
	p.addBE(1, 300*time.Microsecond)
	for i := 0; !p.paused(); i++ {
		if i == 60 {
			t.Fatal("60 steps: the BE not paused")
		}
		p.run(1)
	}
	let := 0
	for i := range 60 {
		l.rate = 4 * (i % 2) // periods every other step
		p.run(1)
		if v, _ := p.c.View(slo.Key{PID: l.pid}); !v.Paused {
			let++
		}
	}
	if let > 0 {
		t.Errorf("%d of 60 steps let the BE's pause go, the LS over its target all through", let)
	}
}
