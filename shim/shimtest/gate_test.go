// Tide's BE gate (shim/tide_be.c, carve_tide_be_launch_before) with
// slicing off, on the virtual clock: a launch that passed the LS check and
// then waited for room in its bounded queue is checked again before it
// goes.

package shimtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// TestGateAgainAfterQueue: a BE launch that found no LS work, then waited
// for room in its queue (one launch in flight, a 5 ms kernel) while an LS
// request arrived, is held again: with no share it does not start on the
// GPU until the LS tenant is done; with a share of 1 it goes when there is
// room, off the LS tenant's reserved TPCs. Slicing is off.
func TestGateAgainAfterQueue(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	ls.serve(ms) // the BE's queue is bounded from now
	be, h := beOn(t, c, dir, ctl.Tide{InflightMax: 1, Epoch: time.Second})
	be.say(t, "dur 5000")
	start := c.Now()
	arrive, leave := start+2*ms, start+8*ms
	ls.at(arrive, true)
	ls.at(leave, false)
	// two launches at start: the first goes at once; the second finds no
	// LS work and waits for the first's kernel, during which the request
	// arrives
	be.launch(t, 1, 2, "kernel")
	be.say(t, "sync")
	ks := be.kernels(t, 1)
	if len(ks) != 2 {
		t.Fatalf("the GPU ran %d kernels of function 1, want 2", len(ks))
	}
	if ks[0][0] != start {
		t.Errorf("the first kernel started %v after the launch, want at once", ks[0][0]-start)
	}
	if ks[1][0] != leave {
		t.Errorf("the second kernel started %v after the launch, with the LS tenant busy from %v to %v: want it held until the LS tenant was done",
			ks[1][0]-start, arrive-start, leave-start)
	}
	// held from when its queue had room (the first kernel done) until then
	if st := h.Snapshot().TideStatus; st.HeldLaunches != 1 || st.Held != leave-start-5*ms || st.NarrowLaunch != 0 {
		t.Errorf("BE status %+v, want one launch held %v, none let through beside the LS work", st, leave-start-5*ms)
	}
}

// TestGateAgainAfterQueueShare: as TestGateAgainAfterQueue, with a share
// of 1: the second launch goes as soon as its queue has room, but off the
// LS tenant's reserved TPCs (TPC bits 0-1), since LS work is in flight.
func TestGateAgainAfterQueueShare(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	ls.serve(ms)
	be, h := beOn(t, c, dir, ctl.Tide{InflightMax: 1, Share: 1})
	be.say(t, "dur 5000")
	ls.at(c.Now()+2*ms, true)
	if got := be.say(t, "klaunch kernel"); got != maskLine(allLive) {
		t.Fatalf("BE launch with the LS idle: %q, want its whole partition", got)
	}
	got, d := be.ask(t, "klaunch kernel")
	if want := maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16)); got != want || d != 5*ms {
		t.Errorf("BE launch that waited for room while an LS request arrived: %q after %v, want %q (off TPC bits 0-1) after 5 ms",
			got, d, want)
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 1 || st.HeldLaunches != 0 {
		t.Errorf("BE status %+v, want one launch within its share, none held", st)
	}
}

// TestGateHeldSinceFirstHold: a BE launch held by LS work, let go when
// the LS tenant went idle, then waiting for room in its queue until LS
// work came again, is held again as from its first hold: with no share it
// goes an epoch after it was first held (the time carve ls counts it
// held), not an epoch after it was held again.
func TestGateHeldSinceFirstHold(t *testing.T) {
	const epoch = 20 * ms
	dir, _, c, ls := lsOnClock(t)
	ls.serve(ms)
	be, h := beOn(t, c, dir, ctl.Tide{InflightMax: 1, Epoch: epoch})
	be.say(t, "dur 10000")
	start := c.Now()
	ls.at(start+1*ms, true)
	ls.at(start+3*ms, false)
	ls.at(start+6*ms, true)
	ls.at(start+50*ms, false)
	be.launch(t, 1, 1, "kernel") // in flight until 10 ms
	c.RunFor(2 * ms)
	held := c.Now()
	// held from 2 ms; let go at 3 ms, then waiting for room until 10 ms,
	// when LS work is in flight again
	be.launch(t, 1, 1, "kernel")
	be.say(t, "sync")
	ks := be.kernels(t, 1)
	if len(ks) != 2 {
		t.Fatalf("the GPU ran %d kernels of function 1, want 2", len(ks))
	}
	if ks[1][0] != held+epoch {
		t.Errorf("the second launch, first held %v after the first, started %v after it: want an epoch (%v) after its first hold",
			held-start, ks[1][0]-start, epoch)
	}
	if st := h.Snapshot().TideStatus; st.HeldLaunches != 1 || st.Held != epoch {
		t.Errorf("BE status %+v, want one launch held an epoch (%v)", st, epoch)
	}
}

// TestGateExNullConfig: cuLaunchKernelEx with a NULL config goes through
// tide's gate as any launch does (the driver then returns its own error,
// CUDA_ERROR_INVALID_VALUE), with slicing off and on: beside endless LS
// work, with no share, it is held an epoch.
func TestGateExNullConfig(t *testing.T) {
	const epoch = 50 * ms
	for _, slice := range []time.Duration{0, slicePiece} {
		t.Run(fmt.Sprint("slice ", slice), func(t *testing.T) {
			dir := t.TempDir()
			n := tideNode(t, dir)
			c := shimtest.NewClock(t, dir, 100*us)
			ls := playLS(t, n, c, enableOnly(0, 1))
			be, h := beOn(t, c, dir, ctl.Tide{Epoch: epoch, Slice: slice})
			ls.set(true)
			for _, cmd := range []string{"klaunch exnull", "klaunch exnull ptds"} {
				if got, d := be.ask(t, cmd); got != "rc 1" || d != epoch {
					t.Errorf("%s beside endless LS work: %q after %v, want rc 1 (the driver's) after an epoch (%v)", cmd, got, d, epoch)
				}
			}
			if st := h.Snapshot().TideStatus; st.HeldLaunches != 2 || st.Held != 2*epoch {
				t.Errorf("BE status %+v, want both launches held an epoch", st)
			}
		})
	}
}

// calls is what the fake driver counted of the calls a shim may make
// beside a launch: all told, and the line that names them.
func (v *vproc) calls(t testing.TB) (int, string) {
	t.Helper()
	got := v.say(t, "calls")
	var n int
	if _, err := fmt.Sscanf(got, "calls %d", &n); err != nil {
		t.Fatalf("calls: %q", got)
	}
	return n, got
}

// TestGateSliceOffNoCalls: with slicing off, a BE's launch beside a busy
// LS tenant makes the driver's launch and no other call of slicing's
// (timing events, queries, occupancy, its kernels' module and memory:
// those the fake counts); with slicing on, the same launches make some,
// and none beside an LS tenant that is not active.
// The queue is unbounded and no time passes, so that tide's own events
// (one a millisecond then) make none either.
func TestGateSliceOffNoCalls(t *testing.T) {
	const launches = 100
	for _, tc := range []struct {
		slice        time.Duration
		active, some bool
	}{{0, true, false}, {slicePiece, true, true}, {slicePiece, false, false}} {
		t.Run(fmt.Sprint("slice ", tc.slice, " active ", tc.active), func(t *testing.T) {
			dir, _, c, ls := lsOnClock(t)
			if tc.active {
				ls.set(true)
			} // else it never served a request
			be, _ := beOn(t, c, dir, ctl.Tide{Share: 1, Slice: tc.slice})
			be.say(t, "dur 1000")
			be.burst(t, 2) // tide's first look at its queue, and its event
			before, _ := be.calls(t)
			if got, d := be.ask(t, fmt.Sprintf("burst %d 1", launches)); d != 0 { // of test function 1
				t.Fatalf("%d launches: %q after %v: the clock moved, and tide may have made calls", launches, got, d)
			}
			after, line := be.calls(t)
			if n := after - before; tc.some != (n > 0) {
				t.Errorf("%d launches of a BE beside an LS tenant (active %v) with slicing at %v made %d calls besides launches (%s), want %s",
					launches, tc.active, tc.slice, n, line, map[bool]string{false: "none", true: "some"}[tc.some])
			}
			if r := be.runs(t, 1); !tc.some && r.launches != launches {
				t.Errorf("%d launches with slicing off made %d driver launches of the function", launches, r.launches)
			}
		})
	}
}

// TestBEConfinedWhileSteered: a BE tenant the SLO controller steers below a
// share of 1 launches off an LS tenant's reserved TPCs between its busy
// periods too, while it was busy in the last ctl.NodeQuiet; not once it is
// quiet that long (whatever heartbeat it writes ahead of the clock), nor
// steered at a share of 1, nor unsteered at any share (the dials it asked
// are its own).
func TestBEConfinedWhileSteered(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	be, h := beOn(t, c, dir, ctl.Tide{Share: 0.5, Epoch: 20 * time.Millisecond})
	off := maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16))
	whole := maskLine(allLive)
	launch := func(want, what string) {
		t.Helper()
		if got, d := be.ask(t, "klaunch kernel"); got != want || d != 0 {
			t.Errorf("%s: BE launch %q after %v, want %q at once", what, got, d, want)
		}
	}
	ls.serve(ms)
	launch(whole, "unsteered at share 0.5, the LS idle a moment")
	if err := h.Steer(0.5, 300*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	launch(off, "steered at 0.5, the LS idle a moment")
	c.RunFor(ctl.NodeQuiet / 2)
	launch(off, "steered at 0.5, the LS idle for half the quiet time")
	if err := h.Steer(1, 300*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	launch(whole, "steered at 1, the LS idle a moment")
	if err := h.Steer(0.01, 50*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	c.RunFor(ctl.NodeQuiet / 2)
	launch(whole, "steered at 0.01, the LS quiet for the quiet time")
	ls.serve(ms)
	launch(off, "steered at 0.01, the LS idle after a request")
	c.RunFor(ctl.NodeQuiet)
	ls.node.beat(0, c.Now()+time.Hour) // a heartbeat no shim's clock wrote: a tenant's own
	launch(whole, "steered at 0.01, the LS quiet, its heartbeat written an hour ahead")
	ls.serve(ms)
	if err := h.Unsteer(); err != nil {
		t.Fatal(err)
	}
	launch(whole, "unsteered again")
}
