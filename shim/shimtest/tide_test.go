// Tide (shim/tide.c): an LS tenant's activity in the node block, the BE
// gate, share, floor and bounded queue beside it, the lease after an LS
// tenant dies, and the timing events that hold BE tenants to no share.

package shimtest_test

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// allLive enables every live bit of the test GPU.
var allLive = enableOnly(0, 1, 2, 3, 9, 10, 11, 12, 13, 14, 15, 16)

const allLiveSMs = 2 * 12 // allLive's 12 TPCs

// tideNode makes a node block in dir, with the GPU's BE file of dir's
// user, as carve's placement of a BE tenant does.
func tideNode(t testing.TB, dir string) *ctl.Node {
	t.Helper()
	n, err := ctl.OpenNode(dir, "node-test", live)
	if err == nil {
		err = ctl.MakeBE(dir, ctl.BE{Node: "node-test"})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func startLS(t testing.TB, dir string) *proc {
	p, _ := startExec(t, dir, ctl.Init{Class: ctl.ClassLS, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live, Node: "node-test"}}})
	p.ready(t)
	return p
}

func startBE(t testing.TB, dir string, tide ctl.Tide) (*proc, *ctl.Handle) {
	p, h := startExec(t, dir, ctl.Init{Class: ctl.ClassBE, Tide: tide, Parts: []ctl.Part{{Node: "node-test", Mask: allLive, Live: live, SMs: allLiveSMs}}})
	p.ready(t)
	return p, h
}

// burst launches n kernels and returns how long the launches took.
func (p *proc) burst(t testing.TB, n int) time.Duration {
	t.Helper()
	got := p.ask(t, fmt.Sprintf("burst %d", n))
	ms, err := strconv.ParseFloat(strings.TrimPrefix(got, "burst "), 64)
	if err != nil {
		t.Fatalf("burst: %q", got)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func busyOf(n *ctl.Node, pid int) (ctl.LSSlot, bool) {
	for _, s := range n.LS() {
		if s.PID == pid {
			return s, true
		}
	}
	return ctl.LSSlot{}, false
}

// TestLSBusyTracking: an LS tenant is busy from its launch until the GPU
// has done the work, as the poller finds, and borrows every TPC no other
// LS tenant reserved.
func TestLSBusyTracking(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	p, _ := lsOn(t, c, dir)
	p.say(t, "dur 20000")
	if got := p.say(t, "klaunch kernel"); got != maskLine([4]uint32{^live[0], ^live[1], ^live[2], ^live[3]}) {
		t.Errorf("LS launch: %q, want every live TPC", got)
	}
	s, ok := busyOf(n, p.pid)
	if !ok || !s.Busy || s.Reserved != [4]uint32{0x3, 0, 0, 0} {
		t.Fatalf("right after the launch: slot %+v (found %v), want busy, reserving TPC bits 0-1", s, ok)
	}
	if bits := playOn(t, n).busyBits(); bits != 1<<s.Slot {
		t.Errorf("node busy bits %#x while slot %d is busy", bits, s.Slot)
	}
	// the poller looks every 10 us (here at every step): busy until the
	// step at which the kernel is done
	c.RunFor(20*ms - c.Step)
	if s, _ = busyOf(n, p.pid); !s.Busy {
		t.Errorf("a step before its 20 ms kernel is done, the LS tenant is idle: %+v", s)
	}
	c.Advance()
	c.Settle()
	if s, _ = busyOf(n, p.pid); s.Busy || s.Requests != 1 || s.BusyTime != 20*ms {
		t.Errorf("after the work: %+v, want idle, 1 request, busy 20 ms", s)
	}
	if bits := playOn(t, n).busyBits(); bits != 0 {
		t.Errorf("node busy bits %#x with the tenant idle", bits)
	}
	p.wait(t)
	if _, ok := busyOf(n, p.pid); ok {
		t.Error("an LS tenant that exited kept its slot")
	}
}

// TestLSKeepsOffFixed: an LS tenant's launches keep off the TPCs the node
// block names as fixed (partitions outside tide), except its own.
func TestLSKeepsOffFixed(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	n.SetFixed([4]uint32{1<<0 | 1<<9 | 1<<10, 0, 0, 0}) // TPC bit 0 is the LS tenant's own
	p := startLS(t, dir)
	p.ask(t, "dur 1000")
	want := maskLine([4]uint32{^live[0] | 1<<9 | 1<<10, ^live[1], ^live[2], ^live[3]})
	if got := p.ask(t, "klaunch kernel"); got != want {
		t.Errorf("LS launch beside fixed TPCs 9-10: %q, want %q", got, want)
	}
	n.SetFixed([4]uint32{1 << 11, 0, 0, 0}) // those ended, another began
	want = maskLine([4]uint32{^live[0] | 1<<11, ^live[1], ^live[2], ^live[3]})
	if got := p.ask(t, "klaunch kernel"); got != want {
		t.Errorf("LS launch after fixed moved to TPC 11: %q, want %q", got, want)
	}
	other, _ := startExec(t, dir, ctl.Init{Class: ctl.ClassLS, Parts: []ctl.Part{{Mask: enableOnly(2, 3), Live: live, Node: "node-test"}}})
	other.ready(t)
	want = maskLine([4]uint32{^live[0] | 1<<11 | 1<<2 | 1<<3, ^live[1], ^live[2], ^live[3]})
	if got := p.ask(t, "klaunch kernel"); got != want {
		t.Errorf("LS launch beside a second LS tenant: %q, want %q", got, want)
	}
	other.wait(t)
	p.wait(t)
}

// TestLSOwn: an LS tenant that keeps to its own TPCs borrows none, and
// is still busy while its work is in flight.
func TestLSOwn(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	p, _ := startOn(t, c, dir, "LS", ctl.Init{Class: ctl.ClassLS, Flags: ctl.FlagLSOwn, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live, Node: "node-test"}}})
	p.say(t, "dur 20000")
	if got, want := p.say(t, "klaunch kernel"), maskLine(enableOnly(0, 1)); got != want {
		t.Errorf("LS launch, own TPCs only: %q, want %q", got, want)
	}
	c.RunFor(20*ms - c.Step)
	if s, ok := busyOf(n, p.pid); !ok || !s.Busy {
		t.Errorf("a step before its work is done: slot %+v (found %v), want busy", s, ok)
	}
	c.Advance()
	c.Settle()
	if s, _ := busyOf(n, p.pid); s.Busy || s.BusyTime != 20*ms {
		t.Errorf("after its work: slot %+v, want idle after 20 ms busy", s)
	}
}

// serveOne has an LS tenant serve a request (busy, then idle): BE tenants
// bound their queues for ctl.NodeQuiet after it. Tests call it just before
// the BE's work, so that a slow start of the BE (a loaded host) does not
// outlast that second.
func serveOne(t testing.TB, ls *proc) {
	t.Helper()
	ls.ask(t, "dur 1000")
	ls.ask(t, "klaunch kernel")
	ls.ask(t, "sync")
}

// TestBEUnboundWhileLSQuiet: with no LS request in the last ctl.NodeQuiet
// (an LS tenant that never served one, or none at all), a BE tenant's
// launches are not bounded; after a request they are, until the LS tenant
// has been quiet that long again.
func TestBEUnboundWhileLSQuiet(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, _ := beOn(t, c, dir, ctl.Tide{InflightMax: 2})
	be.say(t, "dur 5000")
	if d := be.burst(t, 10); d != 0 {
		t.Errorf("beside an LS tenant that never served a request, 10 launches of 5 ms kernels (2 in flight) took %v; want no wait", d)
	}
	if _, d := be.ask(t, "sync"); d != 50*ms {
		t.Errorf("sync after 10 kernels of 5 ms took %v", d)
	}
	ls.serve(ms)
	served := c.Now()
	// 2 in flight, launches at 0, 0, 5, ... 40 ms; and a step before
	// them, for the first to see that the 10 launches it did not count
	// are done
	if d := be.burst(t, 10); d != 40*ms+c.Step {
		t.Errorf("right after an LS request, 10 launches took %v; want 40 ms and a step (bounded)", d)
	}
	be.say(t, "sync")
	c.RunFor(served + ctl.NodeQuiet - c.Now())
	if c.Now() != served+ctl.NodeQuiet {
		t.Fatalf("the clock is %v past the request, want %v", c.Now()-served, ctl.NodeQuiet)
	}
	if d := be.burst(t, 10); d != 0 {
		t.Errorf("an LS tenant quiet for %v again, 10 launches took %v", ctl.NodeQuiet, d)
	}
}

// TestBEHeldWhileLSBusy: a BE launch waits while LS work is in flight and
// goes as soon as it is done; then runs freely.
func TestBEHeldWhileLSBusy(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{InflightMax: 2, Epoch: time.Second})
	be.say(t, "dur 1000")
	ls.set(true)
	ls.at(c.Now()+60*ms, false)
	if d := be.burst(t, 1); d != 60*ms {
		t.Errorf("a BE launch during 60 ms of LS work took %v, want 60 ms", d)
	}
	st := h.Snapshot().TideStatus
	if st.HeldLaunches != 1 || st.Held != 60*ms || st.NarrowLaunch != 0 {
		t.Errorf("BE status %+v, want one launch held 60 ms, none narrow", st)
	}
	if d := be.burst(t, 1); d != 0 {
		t.Errorf("with the LS idle a BE launch took %v, want no wait", d)
	}
	if got := be.say(t, "klaunch kernel"); got != maskLine(allLive) {
		t.Errorf("BE launch with the LS idle: %q, want its whole partition", got)
	}
}

// TestBEShare: with a share, a BE tenant launches while LS work is in
// flight, off the LS tenant's reserved TPCs.
func TestBEShare(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{Share: 0.5, Epoch: 20 * time.Millisecond})
	c.RunFor(20 * ms) // the share's bucket, empty at the start, fills in an epoch
	ls.set(true)
	got, d := be.ask(t, "klaunch kernel")
	if want := maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16)); got != want || d != 0 {
		t.Errorf("BE launch within its share: %q after %v, want %q (off TPC bits 0-1) at once", got, d, want)
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 1 || st.HeldLaunches != 0 {
		t.Errorf("BE status %+v, want one launch within its share, none held", st)
	}
}

// TestBEFloor: a BE tenant with a floor launches there while LS work is
// in flight, on its whole partition while none is; moved to a partition
// that leaves fewer than ctl.NarrowMin TPCs of its floor, it is not
// narrowed (its kernels might never finish there) but held, and runs on
// its partition after an epoch.
func TestBEFloor(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	floor := enableOnly(9, 10, 11, 12, 13, 14, 15, 16)
	be, h := startOn(t, c, dir, "BE", ctl.Init{Class: ctl.ClassBE, Tide: ctl.Tide{Share: 1, Epoch: 20 * time.Millisecond}, Parts: []ctl.Part{{Mask: allLive, Live: live, Floor: [4]uint32{^floor[0], ^floor[1], ^floor[2], ^floor[3]}, Node: "node-test"}}})
	if got := h.Snapshot().Tide.Floor; got != 8 {
		t.Errorf("snapshot's floor: %d TPCs, want 8", got)
	}
	if got := be.say(t, "klaunch kernel"); got != maskLine(allLive) {
		t.Errorf("BE launch with the LS idle: %q, want its whole partition", got)
	}
	ls.set(true)
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(floor) || d != 0 {
		t.Errorf("BE launch while LS work is in flight: %q after %v, want its floor %q at once", got, d, maskLine(floor))
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 1 || st.HeldLaunches != 0 {
		t.Errorf("BE status %+v, want a launch on its floor, none held (share 1)", st)
	}
	if _, err := h.SetMask(enableOnly(0, 1, 2, 9, 10, 11), 12); err != nil {
		t.Fatal(err)
	}
	be.say(t, "dur 1000")
	if d := be.burst(t, 1); d != 20*ms {
		t.Errorf("a BE launch with 3 TPCs of its floor left took %v, want it held an epoch (20 ms)", d)
	}
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(enableOnly(0, 1, 2, 9, 10, 11)) || d != 20*ms {
		t.Errorf("BE with 3 TPCs of its floor left, launching while LS work is in flight: %q after %v, want its partition %q after an epoch",
			got, d, maskLine(enableOnly(0, 1, 2, 9, 10, 11)))
	}
}

// TestBENarrowMin: a BE tenant without a floor is not narrowed off the
// busy LS tenants' TPCs when that would leave it fewer than ctl.NarrowMin:
// its share buys nothing then, and after an epoch held it runs on its
// partition.
func TestBENarrowMin(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1, 2, 3, 9)) // 5 of the 12 TPCs reserved
	be, h := beOn(t, c, dir, ctl.Tide{Share: 1, Epoch: 20 * time.Millisecond})
	be.say(t, "dur 1000")
	ls.set(true)
	if d := be.burst(t, 1); d != 20*ms {
		t.Errorf("a BE launch with 7 TPCs to narrow onto took %v, want it held an epoch (20 ms)", d)
	}
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(allLive) || d != 20*ms {
		t.Errorf("BE launch after an epoch held: %q after %v, want its whole partition after 20 ms", got, d)
	}
	if st := h.Snapshot().TideStatus; st.HeldLaunches != 2 || st.Held != 40*ms {
		t.Errorf("BE status %+v, want both launches held 20 ms", st)
	}
}

// TestBEShareBudget: while LS work is in flight, a BE tenant gets its
// share of the time, counted at its kernels' measured time: with 5 ms
// kernels and a share of a quarter, one launch every 20 ms.
func TestBEShareBudget(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  uint64
	}{
		// 0.25 x 400 ms / 5 ms = 20, and the bucket full (0.25 x 20 ms,
		// a kernel) at the start: launches at 0, 20, ... 400 ms. Held for
		// the wait as if it were kernel time, the BE got 8-11.
		{0.25, 21},
		// a share of 1 is never held: 2 kernels in flight, a launch
		// every 5 ms once the second is
		{1, 82},
	} {
		t.Run(fmt.Sprint(tc.share), func(t *testing.T) {
			dir := t.TempDir()
			n := tideNode(t, dir)
			c := shimtest.NewClock(t, dir, 100*time.Microsecond)
			ls := playLS(t, n, c, enableOnly(0, 1))
			be, h := beOn(t, c, dir, ctl.Tide{Share: tc.share, Epoch: 20 * time.Millisecond, InflightMax: 2})
			ls.serve(ms) // the BE's queue is bounded from now
			be.say(t, "dur 5000")
			// its kernels measured while it waits on its queue: launches
			// at 0, 0, 5, ... 30 ms
			if d := be.burst(t, 8); d != 30*ms {
				t.Errorf("8 launches, 2 in flight: %v, want 30 ms", d)
			}
			be.say(t, "sync")
			if k := h.Snapshot().TideStatus.Kernel; k != 5*ms {
				t.Fatalf("kernels measured %v, want 5 ms", k)
			}
			ls.set(true) // and busy for good
			start := c.Now()
			var launches uint64
			for c.Now()-start < 400*ms {
				be.burst(t, 1)
				launches++
			}
			st := h.Snapshot().TideStatus
			if st.NarrowLaunch != tc.want || launches != tc.want || st.Kernel != 5*ms {
				t.Errorf("%d launches in 400 ms of LS work, %d within the share (status %+v); want %d, kernels measured 5 ms",
					launches, st.NarrowLaunch, st, tc.want)
			}
		})
	}
}

// TestBEInflightBound: a BE tenant that never synchronizes keeps at most
// inflight_max launches on the GPU.
func TestBEInflightBound(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{InflightMax: 2})
	ls.serve(ms)
	be.say(t, "dur 5000")
	// launches at 0, 0, then each as a kernel is done: the last at 40 ms
	if d := be.burst(t, 10); d != 40*ms {
		t.Errorf("10 launches of 5 ms kernels, 2 in flight at most, took %v; want 40 ms", d)
	}
	if in := h.Snapshot().TideStatus.Inflight; in != 2 {
		t.Errorf("%d in flight after the burst, want 2", in)
	}
	h.SetTide(ctl.Tide{InflightMax: 0})
	if d := be.burst(t, 10); d != 0 {
		t.Errorf("without a bound, 10 launches took %v", d)
	}
}

// TestLeaseAfterLSDies: an LS tenant killed while busy holds the BE back no
// longer than the lease; its entry is reclaimed once it is dead, not
// before.
func TestLeaseAfterLSDies(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls, _ := lsOn(t, c, dir)
	be, _ := beOn(t, c, dir, ctl.Tide{Epoch: time.Hour})
	ls.say(t, "dur 100000000")
	ls.say(t, "klaunch kernel") // 100 s, and its heartbeat now
	c.Settle()
	if s, _ := busyOf(n, ls.pid); !s.Busy {
		t.Fatal("LS not busy")
	}
	if freed := n.Reclaim(); freed != 0 { // its entry's lock is held
		t.Fatalf("Reclaim freed %d entries of a live LS tenant", freed)
	}
	ls.p.cmd.Process.Signal(syscall.SIGKILL)
	ls.p.cmd.Wait()
	c.Release(ls.pid)
	if d := be.burst(t, 1); d != playOn(t, n).lease() || d != ctl.NodeLease {
		t.Errorf("after the LS tenant died, a BE launch waited %v, want the lease, %v", d, ctl.NodeLease)
	}
	if freed := n.Reclaim(); freed != 1 {
		t.Errorf("Reclaim freed %d slots, want the dead tenant's", freed)
	}
	if bits := playOn(t, n).busyBits(); bits != 0 {
		t.Errorf("node busy bits %#x after the dead tenant's slot was freed", bits)
	}
}

// TestBENeverStarved: with no share and LS work without end, a BE launch
// still goes after an epoch.
func TestBENeverStarved(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{Epoch: 50 * time.Millisecond})
	ls.set(true)
	for i := range 3 {
		if d := be.burst(t, 1); d != 50*ms {
			t.Errorf("launch %d beside endless LS work took %v, want an epoch (50 ms)", i, d)
		}
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 3 || st.HeldLaunches != 3 || st.Held != 150*ms {
		t.Errorf("BE status %+v, want 3 launches let through, each held 50 ms", st)
	}
}

// TestBEQueueBound: a bound in predicted GPU time keeps as many kernels in
// flight as fit in it, by their measured time.
func TestBEQueueBound(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{Queue: 12 * time.Millisecond})
	ls.serve(ms)
	be.say(t, "dur 5000")
	// Until a kernel is measured it is taken for 1 ms: 13 launches at 0
	// (12 x 1 ms fit, so a 13th goes), with an event after the 1st, 5th,
	// 9th and 13th. The first times a kernel at 5 ms; then the queue, 60
	// ms by that, waits for the 13th, at 65 ms. From then 2 more fit
	// (3 x 5 ms > 12): launches at 65, 65, 65, and one at each kernel
	// done, the 20th at 85 ms.
	if d := be.burst(t, 20); d != 85*ms {
		t.Errorf("20 launches of 5 ms kernels within 12 ms of queue took %v; want 85 ms", d)
	}
	st := h.Snapshot().TideStatus
	if st.Kernel != 5*ms || st.Inflight != 3 {
		t.Errorf("BE status %+v: want kernels measured 5 ms, 3 in flight", st)
	}
}

// TestManyThreads: LS and BE tenants launching from four threads at once:
// the LS is busy while any thread's work is in flight and idle after; the
// BE's bounded queue holds for all its threads, and nothing deadlocks.
func TestManyThreads(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls, _ := lsOn(t, c, dir)
	be, h := beOn(t, c, dir, ctl.Tide{InflightMax: 8, Share: 0.5, Epoch: 5 * time.Millisecond})
	// a request served, so that the BE's queue is bounded from the start;
	// it ends when the poller finds it done, at the step its sync returns
	// (on the real clock, up to the poller's next look after: a launch
	// before that joined this request, and the tenant never became busy
	// again)
	ls.say(t, "dur 1000")
	ls.say(t, "klaunch kernel")
	ls.say(t, "sync")
	c.Settle()
	before, _ := busyOf(n, ls.pid)
	if before.Busy || before.Requests != 1 {
		t.Fatalf("LS slot %+v after a request of 1 ms and its sync, want idle after 1 request", before)
	}
	ls.say(t, "dur 200")
	be.say(t, "dur 200")
	// the LS's 800 launches go at once (an LS launch never waits), then
	// the BE's, beside them
	start := c.Now()
	if got, d := ls.ask(t, "threads 200"); !strings.HasPrefix(got, "threads ") || d != 0 {
		t.Fatalf("LS: %q after %v", got, d)
	}
	if got, _ := be.ask(t, "threads 200"); !strings.HasPrefix(got, "threads ") {
		t.Fatalf("BE: %q", got)
	}
	// launches pass the queue's check one thread at a time, but are
	// counted once made: the other 3 may pass it meanwhile
	if in := h.Snapshot().TideStatus.Inflight; in > 8+3 {
		t.Errorf("%d BE launches in flight, bound 8", in)
	}
	c.Drive("the LS tenant to be idle", func() bool { s, _ := busyOf(n, ls.pid); return !s.Busy }, time.Second)
	s, _ := busyOf(n, ls.pid)
	if s.Requests != before.Requests+1 || s.BusyTime-before.BusyTime != 160*ms {
		t.Errorf("after 800 LS launches of 200 us at once: slot %+v, want one more request, busy 160 ms more (before: %+v)", s, before)
	}
	if c.Now()-start < 160*ms {
		t.Errorf("the LS tenant idle %v after its launches, before its work was done", c.Now()-start)
	}
}

// BenchmarkLaunchCost: host time of one launch of an empty kernel through
// the shim against the fake driver, per tenant class (go test -bench
// LaunchCost ./shim/shimtest). The driver's own cost is the fake's, so the
// differences between cases are the shim's.
func BenchmarkLaunchCost(b *testing.B) {
	cases := []struct {
		name  string
		start func(b *testing.B, dir string) *proc
	}{
		{"no shim", func(b *testing.B, dir string) *proc { return startNoShim(b) }},
		{"partition", func(b *testing.B, dir string) *proc {
			p, _ := startExec(b, dir, ctl.Init{Parts: []ctl.Part{{Mask: allLive, Live: live}}})
			p.ready(b)
			return p
		}},
		{"partition of a GPU named", func(b *testing.B, dir string) *proc {
			p, _ := startExec(b, dir, ctl.Init{Parts: []ctl.Part{{GPU: fakeGPU0, Mask: allLive, Live: live}}})
			p.ready(b)
			return p
		}},
		{"LS", func(b *testing.B, dir string) *proc { return startLS(b, dir) }},
		{"BE, LS quiet", func(b *testing.B, dir string) *proc {
			startLS(b, dir)
			p, _ := startBE(b, dir, ctl.Tide{})
			return p
		}},
		{"BE, LS recent", func(b *testing.B, dir string) *proc {
			ls := startLS(b, dir)
			p, _ := startBE(b, dir, ctl.Tide{InflightMax: 1 << 20})
			serveOne(b, ls)
			return p
		}},
		{"BE bounded, LS recent", func(b *testing.B, dir string) *proc {
			ls := startLS(b, dir)
			p, _ := startBE(b, dir, ctl.Tide{InflightMax: 8, Queue: 300 * time.Microsecond, Share: 1})
			serveOne(b, ls)
			return p
		}},
		{"BE steered by the SLO controller, LS recent", func(b *testing.B, dir string) *proc {
			ls := startLS(b, dir)
			p, h := startBE(b, dir, ctl.Tide{InflightMax: 8, Queue: 300 * time.Microsecond, Share: 1})
			if err := h.Steer(0.3, 100*time.Microsecond); err != nil {
				b.Fatal(err)
			}
			serveOne(b, ls)
			return p
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			tideNode(b, dir)
			p := c.start(b, dir)
			p.ask(b, "dur 0")
			p.burst(b, 1000) // warm
			b.ResetTimer()
			d := p.burst(b, b.N)
			b.StopTimer()
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "ns/launch")
			p.wait(b)
		})
	}
}

// TestBENoShareWhileLSTimes: while a busy LS tenant times its own work (it
// recorded an event made for timing in the last ctl.NodeTiming), a BE
// tenant gets no share of the LS's busy time; then its share again. An
// idle LS tenant that timed in the last ctl.NodeTiming holds it back as a
// busy one (an autotuner is idle between candidates), then nothing.
func TestBENoShareWhileLSTimes(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{Share: 0.5, Epoch: time.Second})
	c.RunFor(time.Second) // the share's bucket full
	ls.set(true)
	ls.node.timing(0, c.Now())
	got, d := be.ask(t, "klaunch kernel")
	if want := maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16)); got != want || d != ctl.NodeTiming {
		t.Errorf("BE launch while the LS times: %q after %v, want %q (its share, off TPC bits 0-1) after %v",
			got, d, want, ctl.NodeTiming)
	}
	if st := h.Snapshot().TideStatus; st.HeldLaunches != 1 || st.NarrowLaunch != 1 {
		t.Errorf("BE status %+v, want one launch held, then run within its share", st)
	}
	ls.set(false)
	ls.node.timing(0, c.Now())
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(allLive) || d != ctl.NodeTiming {
		t.Errorf("BE launch beside an idle LS that just timed: %q after %v, want its whole partition after %v",
			got, d, ctl.NodeTiming)
	}
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(allLive) || d != 0 {
		t.Errorf("BE launch once the idle LS's timing is %v old: %q after %v, want its whole partition at once",
			ctl.NodeTiming, got, d)
	}
	ls.node.timing(0, c.Now()+time.Second)
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(allLive) || d != 0 {
		t.Errorf("BE launch beside an idle LS whose timing stamp is ahead of the clock: %q after %v, want its whole partition at once", got, d)
	}
}

// TestLSStampsTimingEvents: an LS tenant's record of an event made for
// timing stamps its slot, by every record entry point; a record of an
// event made without timing, or of one destroyed, does not.
func TestLSStampsTimingEvents(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	p, _ := lsOn(t, c, dir)
	s, ok := busyOf(n, p.pid)
	if !ok {
		t.Fatal("the LS tenant has no slot")
	}
	node := playOn(t, n)
	if got := p.say(t, "evnew 2"); got != "ev 0" {
		t.Fatalf("evnew 2 (CU_EVENT_DISABLE_TIMING): %q", got)
	}
	if got := p.say(t, "evnew 0"); got != "ev 1" {
		t.Fatalf("evnew 0: %q", got)
	}
	c.RunFor(ms)
	if got := p.say(t, "evrecord 0"); got != "rc 0" || node.stamp(s.Slot) != 0 {
		t.Errorf("record of an event without timing: %q, stamp %v, want rc 0 and none", got, node.stamp(s.Slot))
	}
	for _, how := range []string{"", " ptds", " flags"} {
		c.RunFor(ms)
		if got := p.say(t, "evrecord 1"+how); got != "rc 0" || node.stamp(s.Slot) != c.Now() {
			t.Errorf("evrecord 1%s of a timing event: %q, stamp %v, want rc 0 and %v", how, got, node.stamp(s.Slot), c.Now())
		}
	}
	stamp := node.stamp(s.Slot)
	if got := p.say(t, "evdel 1"); got != "rc 0" {
		t.Fatalf("evdel 1: %q", got)
	}
	// a new event without timing, likely at the destroyed one's address
	if got := p.say(t, "evnew 2"); got != "ev 2" {
		t.Fatalf("evnew 2: %q", got)
	}
	c.RunFor(ms)
	if got := p.say(t, "evrecord 2"); got != "rc 0" || node.stamp(s.Slot) != stamp {
		t.Errorf("record of an event without timing after a timing one was destroyed: %q, stamp %v, want %v",
			got, node.stamp(s.Slot), stamp)
	}
}
