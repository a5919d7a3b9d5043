package ctl_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// allLive enables every live bit of the test GPU.
var allLive = enableOnly(0, 1, 2, 3, 9, 10, 11, 12, 13, 14, 15, 16)

// tideNode makes a node block in dir.
func tideNode(t testing.TB, dir string) *ctl.Node {
	t.Helper()
	n, err := ctl.OpenNode(dir, "node-test", live)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func startLS(t testing.TB, dir string) *proc {
	p, _ := startExec(t, dir, ctl.Init{Mask: enableOnly(0, 1), Live: live, Class: ctl.ClassLS, Tide: ctl.Tide{Node: "node-test"}})
	p.ready(t)
	return p
}

func startBE(t testing.TB, dir string, tide ctl.Tide) (*proc, *ctl.Handle) {
	tide.Node = "node-test"
	p, h := startExec(t, dir, ctl.Init{Mask: allLive, Live: live, Class: ctl.ClassBE, Tide: tide})
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
	p := startLS(t, dir)
	p.ask(t, "dur 20000")
	if got := p.ask(t, "klaunch kernel"); got != maskLine([4]uint32{^live[0], ^live[1], ^live[2], ^live[3]}) {
		t.Errorf("LS launch: %q, want every live TPC", got)
	}
	s, ok := busyOf(n, p.cmd.Process.Pid)
	if !ok || !s.Busy || s.Reserved != [4]uint32{0x3, 0, 0, 0} {
		t.Fatalf("right after the launch: slot %+v (found %v), want busy, reserving TPC bits 0-1", s, ok)
	}
	if bits := n.BusyBits(); bits != 1<<s.Slot {
		t.Errorf("node busy bits %#x while slot %d is busy", bits, s.Slot)
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.Busy && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		s, _ = busyOf(n, p.cmd.Process.Pid)
	}
	if s.Busy || s.Requests != 1 || s.BusyTime < 15*time.Millisecond || s.BusyTime > 500*time.Millisecond {
		t.Errorf("after the work: %+v, want idle, 1 request, busy about 20 ms", s)
	}
	if bits := n.BusyBits(); bits != 0 {
		t.Errorf("node busy bits %#x with the tenant idle", bits)
	}
	p.wait(t)
	if _, ok := busyOf(n, p.cmd.Process.Pid); ok {
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
	other, _ := startExec(t, dir, ctl.Init{Mask: enableOnly(2, 3), Live: live, Class: ctl.ClassLS, Tide: ctl.Tide{Node: "node-test"}})
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
	p, _ := startExec(t, dir, ctl.Init{Mask: enableOnly(0, 1), Live: live, Class: ctl.ClassLS, Flags: ctl.FlagLSOwn,
		Tide: ctl.Tide{Node: "node-test"}})
	p.ready(t)
	p.ask(t, "dur 20000")
	if got, want := p.ask(t, "klaunch kernel"), maskLine(enableOnly(0, 1)); got != want {
		t.Errorf("LS launch, own TPCs only: %q, want %q", got, want)
	}
	if s, ok := busyOf(n, p.cmd.Process.Pid); !ok || !s.Busy {
		t.Errorf("slot %+v (found %v), want busy", s, ok)
	}
	p.wait(t)
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
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, _ := startBE(t, dir, ctl.Tide{InflightMax: 2})
	be.ask(t, "dur 5000")
	if d := be.burst(t, 10); d > 20*time.Millisecond {
		t.Errorf("beside a quiet LS tenant, 10 launches of 5 ms kernels (2 in flight) took %v; want no wait", d)
	}
	be.ask(t, "sync")
	ls.ask(t, "dur 1000")
	ls.ask(t, "klaunch kernel")
	ls.ask(t, "sync")
	if d := be.burst(t, 10); d < 30*time.Millisecond {
		t.Errorf("right after an LS request, 10 launches took %v; want about 40 ms (bounded)", d)
	}
	be.ask(t, "sync")
	time.Sleep(ctl.NodeQuiet + 100*time.Millisecond)
	if d := be.burst(t, 10); d > 20*time.Millisecond {
		t.Errorf("an LS tenant quiet for %v again, 10 launches took %v", ctl.NodeQuiet, d)
	}
}

// TestBEHeldWhileLSBusy: a BE launch waits while LS work is in flight and
// goes as soon as it is done; then runs freely.
func TestBEHeldWhileLSBusy(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{InflightMax: 2, Epoch: time.Second})
	be.ask(t, "dur 1000")
	ls.ask(t, "dur 60000")
	ls.ask(t, "klaunch kernel")
	start := time.Now()
	if d := be.burst(t, 1); d < 30*time.Millisecond || d > time.Second {
		t.Errorf("a BE launch during 60 ms of LS work took %v", d)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("held %v", d)
	}
	st := h.Snapshot().TideStatus
	if st.HeldLaunches != 1 || st.Held < 30*time.Millisecond || st.NarrowLaunch != 0 {
		t.Errorf("BE status %+v, want one launch held about 60 ms, none narrow", st)
	}
	if d := be.burst(t, 1); d > 20*time.Millisecond {
		t.Errorf("with the LS idle a BE launch took %v", d)
	}
	if got := be.ask(t, "klaunch kernel"); got != maskLine(allLive) {
		t.Errorf("BE launch with the LS idle: %q, want its whole partition", got)
	}
}

// TestBEShare: with a share, a BE tenant launches while LS work is in
// flight, off the LS tenant's reserved TPCs.
func TestBEShare(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{Share: 0.5, Epoch: 20 * time.Millisecond})
	ls.ask(t, "dur 2000000")
	ls.ask(t, "klaunch kernel") // 2 s of LS work
	got := be.ask(t, "klaunch kernel")
	if want := maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16)); got != want {
		t.Errorf("BE launch within its share: %q, want %q (off TPC bits 0-1)", got, want)
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 1 {
		t.Errorf("BE status %+v, want one launch within its share", st)
	}
}

// TestBEFloor: a BE tenant with a floor launches there while LS work is
// in flight, on its whole partition while none is; moved to a partition
// that leaves fewer than ctl.NarrowMin TPCs of its floor, it is not
// narrowed (its kernels might never finish there) but held, and runs on
// its partition after an epoch.
func TestBEFloor(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	floor := enableOnly(9, 10, 11, 12, 13, 14, 15, 16)
	be, h := startExec(t, dir, ctl.Init{Mask: allLive, Live: live, Class: ctl.ClassBE, Floor: [4]uint32{^floor[0], ^floor[1], ^floor[2], ^floor[3]},
		Tide: ctl.Tide{Node: "node-test", Share: 1, Epoch: 20 * time.Millisecond}})
	be.ready(t)
	if got := h.Snapshot().Tide.Floor; got != 8 {
		t.Errorf("snapshot's floor: %d TPCs, want 8", got)
	}
	if got := be.ask(t, "klaunch kernel"); got != maskLine(allLive) {
		t.Errorf("BE launch with the LS idle: %q, want its whole partition", got)
	}
	ls.ask(t, "dur 2000000")
	ls.ask(t, "klaunch kernel") // 2 s of LS work
	if got, want := be.ask(t, "klaunch kernel"), maskLine(floor); got != want {
		t.Errorf("BE launch while LS work is in flight: %q, want its floor %q", got, want)
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 1 || st.HeldLaunches != 0 {
		t.Errorf("BE status %+v, want a launch on its floor, none held (share 1)", st)
	}
	if _, err := h.SetMask(enableOnly(0, 1, 2, 9, 10, 11), 12); err != nil {
		t.Fatal(err)
	}
	be.ask(t, "dur 1000")
	if d := be.burst(t, 1); d < 15*time.Millisecond || d > time.Second {
		t.Errorf("a BE launch with 3 TPCs of its floor left took %v, want it held about an epoch (20 ms)", d)
	}
	if got, want := be.ask(t, "klaunch kernel"), maskLine(enableOnly(0, 1, 2, 9, 10, 11)); got != want {
		t.Errorf("BE with 3 TPCs of its floor left, launching while LS work is in flight: %q, want its partition %q", got, want)
	}
}

// TestBENarrowMin: a BE tenant without a floor is not narrowed off the
// busy LS tenants' TPCs when that would leave it fewer than ctl.NarrowMin:
// its share buys nothing then, and after an epoch held it runs on its
// partition.
func TestBENarrowMin(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls, _ := startExec(t, dir, ctl.Init{Mask: enableOnly(0, 1, 2, 3, 9), Live: live, Class: ctl.ClassLS, Tide: ctl.Tide{Node: "node-test"}})
	ls.ready(t)
	be, h := startBE(t, dir, ctl.Tide{Share: 1, Epoch: 20 * time.Millisecond})
	be.ask(t, "dur 1000")
	ls.ask(t, "dur 2000000")
	ls.ask(t, "klaunch kernel") // 2 s of LS work, 5 of the 12 TPCs reserved
	if d := be.burst(t, 1); d < 15*time.Millisecond || d > time.Second {
		t.Errorf("a BE launch with 7 TPCs to narrow onto took %v, want it held about an epoch (20 ms)", d)
	}
	if got := be.ask(t, "klaunch kernel"); got != maskLine(allLive) {
		t.Errorf("BE launch after an epoch held: %q, want its whole partition", got)
	}
	if st := h.Snapshot().TideStatus; st.HeldLaunches != 2 {
		t.Errorf("BE status %+v, want both launches held", st)
	}
}

// TestBEShareBudget: while LS work is in flight, a BE tenant gets about
// its share of the time, counted at its kernels' measured time: with 5 ms
// kernels and a share of a quarter, about one launch every 20 ms.
func TestBEShareBudget(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{Share: 0.25, Epoch: 20 * time.Millisecond, InflightMax: 2})
	serveOne(t, ls)
	be.ask(t, "dur 5000")
	be.burst(t, 8) // its kernels measured while it waits on its queue
	be.ask(t, "sync")
	ls.ask(t, "dur 500000")
	ls.ask(t, "klaunch kernel") // 500 ms of LS work
	start := time.Now()
	n := 0
	for time.Since(start) < 400*time.Millisecond {
		be.burst(t, 1)
		n++
	}
	st := h.Snapshot().TideStatus
	// 0.25 x 400 ms / 5 ms = 20, and a full bucket (0.25 x 20 ms) at first.
	// Held for the wait as if it were kernel time, the BE got 8-11; with no
	// share enforced it would get about 80 (2 in flight). On a host loaded
	// by the whole suite kernels were measured as short as 4.3 ms, and the
	// BE got up to 33: the bound allows that.
	t.Logf("%d launches within the share in 400 ms of LS work, kernels measured %v", st.NarrowLaunch, st.Kernel)
	if st.NarrowLaunch < 14 || st.NarrowLaunch > 40 || uint64(n) != st.NarrowLaunch {
		t.Errorf("%d launches in 400 ms of LS work, %d within the share (status %+v); want about 21", n, st.NarrowLaunch, st)
	}
}

// TestBEInflightBound: a BE tenant that never synchronizes keeps at most
// inflight_max launches on the GPU.
func TestBEInflightBound(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{InflightMax: 2})
	serveOne(t, ls)
	be.ask(t, "dur 5000")
	if d := be.burst(t, 10); d < 30*time.Millisecond || d > 2*time.Second {
		t.Errorf("10 launches of 5 ms kernels, 2 in flight at most, took %v; want about 40 ms", d)
	}
	if in := h.Snapshot().TideStatus.Inflight; in > 2 {
		t.Errorf("%d in flight after the burst", in)
	}
	h.SetTide(ctl.Tide{InflightMax: 0})
	if d := be.burst(t, 10); d > 20*time.Millisecond {
		t.Errorf("without a bound, 10 launches took %v", d)
	}
}

// TestLeaseAfterLSDies: an LS tenant killed while busy holds the BE back no
// longer than the lease.
func TestLeaseAfterLSDies(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	ls := startLS(t, dir)
	be, _ := startBE(t, dir, ctl.Tide{Epoch: time.Hour})
	ls.ask(t, "dur 100000000")
	ls.ask(t, "klaunch kernel") // 100 s
	if s, _ := busyOf(n, ls.cmd.Process.Pid); !s.Busy {
		t.Fatal("LS not busy")
	}
	ls.cmd.Process.Signal(syscall.SIGKILL)
	ls.cmd.Wait()
	if d := be.burst(t, 1); d > time.Second {
		t.Errorf("after the LS tenant died, a BE launch waited %v (lease %v)", d, ctl.NodeLease)
	}
	if freed := n.Reclaim(); freed != 1 {
		t.Errorf("Reclaim freed %d slots, want the dead tenant's", freed)
	}
	if bits := n.BusyBits(); bits != 0 {
		t.Errorf("node busy bits %#x after the dead tenant's slot was freed", bits)
	}
}

// TestBENeverStarved: with no share and LS work without end, a BE launch
// still goes after an epoch.
func TestBENeverStarved(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{Epoch: 50 * time.Millisecond})
	ls.ask(t, "dur 100000000")
	ls.ask(t, "klaunch kernel")
	for i := range 3 {
		if d := be.burst(t, 1); d < 30*time.Millisecond || d > time.Second {
			t.Errorf("launch %d beside endless LS work took %v, want about an epoch (50 ms)", i, d)
		}
	}
	if st := h.Snapshot().TideStatus; st.NarrowLaunch != 3 {
		t.Errorf("BE status %+v, want 3 launches let through", st)
	}
}

// TestBEQueueBound: a bound in predicted GPU time keeps as many kernels in
// flight as fit in it, by their measured time.
func TestBEQueueBound(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{Queue: 12 * time.Millisecond})
	serveOne(t, ls)
	be.ask(t, "dur 5000")
	if d := be.burst(t, 20); d < 50*time.Millisecond || d > 3*time.Second {
		t.Errorf("20 launches of 5 ms kernels within 12 ms of queue took %v; want about 85 ms", d)
	}
	st := h.Snapshot().TideStatus
	if st.Kernel < 3*time.Millisecond || st.Kernel > 20*time.Millisecond || st.Inflight > 3 {
		t.Errorf("BE status %+v: want kernels measured about 5 ms, at most 3 in flight", st)
	}
}

// TestManyThreads: LS and BE tenants launching from four threads at once:
// the LS is busy while any thread's work is in flight and idle after; the
// BE's bounded queue holds for all its threads, and nothing deadlocks.
func TestManyThreads(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	ls := startLS(t, dir)
	be, h := startBE(t, dir, ctl.Tide{InflightMax: 8, Share: 0.5, Epoch: 5 * time.Millisecond})
	serveOne(t, ls) // the BE's queue is bounded from the start
	before, _ := busyOf(n, ls.cmd.Process.Pid)
	ls.ask(t, "dur 200")
	be.ask(t, "dur 200")
	done := make(chan string, 1)
	go func() { done <- be.ask(t, "threads 200") }()
	if got := ls.ask(t, "threads 200"); !strings.HasPrefix(got, "threads ") {
		t.Fatalf("LS: %q", got)
	}
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "threads ") {
			t.Fatalf("BE: %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("800 BE launches from 4 threads beside a busy LS did not finish")
	}
	if in := h.Snapshot().TideStatus.Inflight; in > 8+4 {
		t.Errorf("%d BE launches in flight, bound 8", in)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		s, _ := busyOf(n, ls.cmd.Process.Pid)
		if !s.Busy {
			if s.Requests == before.Requests {
				t.Error("the LS tenant never became busy")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the LS tenant stayed busy after its 800 launches: %+v", s)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkLaunchCost: host time of one launch of an empty kernel through
// the shim against the fake driver, per tenant class (go test -bench
// LaunchCost ./internal/ctl). The driver's own cost is the fake's, so the
// differences between cases are the shim's.
func BenchmarkLaunchCost(b *testing.B) {
	cases := []struct {
		name  string
		start func(b *testing.B, dir string) *proc
	}{
		{"no shim", func(b *testing.B, dir string) *proc {
			a := artifacts(b)
			cmd := exec.Command(a.Driver)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "CARVE_LIBCUDA=" + a.Fake}
			p := &proc{cmd: cmd, stderr: &strings.Builder{}}
			p.in, _ = cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = p.stderr
			p.out = bufio.NewReader(stdout)
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			p.ready(b)
			return p
		}},
		{"partition", func(b *testing.B, dir string) *proc {
			p, _ := startExec(b, dir, ctl.Init{Mask: allLive, Live: live})
			p.ready(b)
			return p
		}},
		{"partition of a GPU named", func(b *testing.B, dir string) *proc {
			p, _ := startExec(b, dir, ctl.Init{GPU: fakeGPU0, Mask: allLive, Live: live})
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

// TestNodeOfAnotherRelease: a node block of another layout is refused with
// what to do, never mapped as this one.
func TestNodeOfAnotherRelease(t *testing.T) {
	dir := t.TempDir()
	n, err := ctl.OpenNode(dir, "node-test", live)
	if err != nil {
		t.Fatal(err)
	}
	path := n.Path
	n.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[4] = ctl.NodeVersion - 1 // version: a uint16 at 4
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.OpenNode(dir, "node-test", live); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("OpenNode of a version %d block: %v", ctl.NodeVersion-1, err)
	}
}
