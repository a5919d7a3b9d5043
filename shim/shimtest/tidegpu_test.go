// Tide on a node of two GPUs (the fake driver's), on the virtual clock:
// each GPU has its node block, and a tenant with partitions on both takes
// part in each; its launches go through the node of their context's GPU.

package shimtest_test

import (
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// twoNodes makes the node blocks of the fake's two GPUs in dir, each with
// its BE file of dir's user (tideNode).
func twoNodes(t testing.TB, dir string) (*ctl.Node, *ctl.Node) {
	t.Helper()
	var nodes [2]*ctl.Node
	for i, l := range [][4]uint32{live, live1} {
		name := []string{"node-0", "node-1"}[i]
		n, err := ctl.OpenNode(dir, name, l)
		if err == nil {
			err = ctl.MakeBE(dir, ctl.BE{Node: name})
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
	}
	return nodes[0], nodes[1]
}

// onBoth is a tenant of class with partitions on both fake GPUs, in their
// node blocks: GPU 0's mask and GPU 1's given.
func onBoth(class uint32, mask0, mask1 [4]uint32, tide ctl.Tide) ctl.Init {
	return ctl.Init{Class: class, Tide: tide, Parts: []ctl.Part{{GPU: fakeGPU0, Node: "node-0", Mask: mask0, Live: live}, {GPU: fakeGPU1, Node: "node-1", Mask: mask1, Live: live1}}}
}

// liveOf1 enables every live TPC of GPU 1.
var liveOf1 = [4]uint32{^live1[0], ^live1[1], ^live1[2], ^live1[3]}

// TestBEHeldPerGPU: LS work on GPU 0 holds back a BE tenant's launches on
// GPU 0 alone; on GPU 1 they go at once, on its whole partition there,
// until LS work is in flight on GPU 1 too.
func TestBEHeldPerGPU(t *testing.T) {
	dir := t.TempDir()
	n0, n1 := twoNodes(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls0, ls1 := playLS(t, n0, c, enableOnly(0, 1)), playLS(t, n1, c, enableOnly(17, 18))
	be, h := startOn(t, c, dir, "BE", onBoth(ctl.ClassBE, allLive, liveOf1, ctl.Tide{Epoch: time.Second}))
	be.say(t, "dur 1000")
	ls0.set(true)
	ls0.at(c.Now()+60*ms, false)
	be.say(t, "ctx 1")
	if got, d := be.ask(t, "klaunch kernel"); got != maskLine(liveOf1) || d != 0 {
		t.Errorf("a BE launch on GPU 1 while LS work is in flight on GPU 0: %q after %v, want its partition there at once", got, d)
	}
	be.say(t, "ctx 0")
	if d := be.burst(t, 1); d != 60*ms {
		t.Errorf("a BE launch on GPU 0 during 60 ms of LS work there took %v, want 60 ms", d)
	}
	ls1.set(true)
	ls1.at(c.Now()+30*ms, false)
	if d := be.burst(t, 1); d != 0 {
		t.Errorf("a BE launch on GPU 0 while LS work is in flight on GPU 1 only took %v, want no wait", d)
	}
	be.say(t, "ctx 1")
	if d := be.burst(t, 1); d != 30*ms {
		t.Errorf("a BE launch on GPU 1 during 30 ms of LS work there took %v, want 30 ms", d)
	}
	if st := h.Snapshot().TideStatus; st.HeldLaunches != 2 || st.Held != 90*ms {
		t.Errorf("BE status %+v, want 2 launches held, 90 ms in all", st)
	}
}

// TestBEShareAndFloorPerGPU: a BE tenant's launches within its share
// while LS work is in flight on a GPU keep off that GPU's busy LS
// tenants' TPCs, or to its floor there.
func TestBEShareAndFloorPerGPU(t *testing.T) {
	dir := t.TempDir()
	n0, n1 := twoNodes(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls0, ls1 := playLS(t, n0, c, enableOnly(0, 1)), playLS(t, n1, c, enableOnly(0, 1, 2, 3))
	in := onBoth(ctl.ClassBE, allLive, liveOf1, ctl.Tide{Share: 1, Epoch: 20 * time.Millisecond})
	floor1 := enableOnly(13, 14, 15, 16, 17, 18, 19, 20) // GPU 1's live bits but 0-3
	in.Parts[1].Floor = [4]uint32{^floor1[0], ^floor1[1], ^floor1[2], ^floor1[3]}
	be, _ := startOn(t, c, dir, "BE", in)
	ls0.set(true)
	ls1.set(true)
	if got, want := be.say(t, "klaunch kernel"), maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16)); got != want {
		t.Errorf("BE on GPU 0, no floor there: %q, want off the LS tenant's TPC bits 0-1 %q", got, want)
	}
	be.say(t, "ctx 1")
	if got, want := be.say(t, "klaunch kernel"), maskLine(floor1); got != want {
		t.Errorf("BE on GPU 1: %q, want its floor there %q", got, want)
	}
	ls1.set(false)
	if got := be.say(t, "klaunch kernel"); got != maskLine(liveOf1) {
		t.Errorf("BE on GPU 1 with the LS idle there: %q, want its whole partition there", got)
	}
}

// TestLSBusyPerGPU: an LS tenant with partitions on both GPUs is busy on
// each while its work there is in flight, in each GPU's node: a BE
// tenant on GPU 1 alone waits for the LS's work on GPU 1, not for its
// longer work on GPU 0 (each context's default stream its own).
func TestLSBusyPerGPU(t *testing.T) {
	dir := t.TempDir()
	n0, n1 := twoNodes(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls, _ := startOn(t, c, dir, "LS", onBoth(ctl.ClassLS, enableOnly(0, 1), enableOnly(17, 18), ctl.Tide{}))
	be, _ := startOn(t, c, dir, "BE", ctl.Init{Class: ctl.ClassBE, Tide: ctl.Tide{Epoch: time.Second}, Parts: []ctl.Part{{GPU: fakeGPU1, Mask: liveOf1, Live: live1, Node: "node-1"}}})
	be.say(t, "ctx 1")
	ls.say(t, "dur 50000")
	if got, want := ls.say(t, "klaunch kernel"), maskLine([4]uint32{^live[0], ^live[1], ^live[2], ^live[3]}); got != want {
		t.Errorf("LS launch on GPU 0: %q, want every live TPC there %q", got, want)
	}
	ls.say(t, "ctx 1")
	ls.say(t, "dur 20000")
	if got, want := ls.say(t, "klaunch kernel"), maskLine(liveOf1); got != want {
		t.Errorf("LS launch on GPU 1: %q, want every live TPC there %q", got, want)
	}
	s0, ok0 := busyOf(n0, ls.pid)
	s1, ok1 := busyOf(n1, ls.pid)
	if !ok0 || !ok1 || !s0.Busy || !s1.Busy || s0.Reserved != [4]uint32{0x3} || s1.Reserved != [4]uint32{3 << 17} {
		t.Fatalf("slots after a launch on each GPU: GPU 0 %+v (%v), GPU 1 %+v (%v); want both busy, each reserving its partition", s0, ok0, s1, ok1)
	}
	// the poller finds the work done at the step it is, and the BE looks
	// at that step or the next: which runs first there is the host's
	if d := be.burst(t, 1); d != 20*ms && d != 20*ms+c.Step {
		t.Errorf("a BE launch on GPU 1 beside 20 ms of LS work there and 50 ms on GPU 0 took %v, want 20 ms (and a step at most)", d)
	}
	if s1, _ = busyOf(n1, ls.pid); s1.Busy || s1.BusyTime != 20*ms || s1.Requests != 1 {
		t.Errorf("GPU 1's slot once its work is done: %+v, want idle after 20 ms busy", s1)
	}
	if s0, _ = busyOf(n0, ls.pid); !s0.Busy {
		t.Errorf("GPU 0's slot while its work is in flight: %+v, want busy", s0)
	}
	c.Drive("the LS's work on GPU 0 to be done", func() bool { s, _ := busyOf(n0, ls.pid); return !s.Busy }, time.Second)
	if s0, _ = busyOf(n0, ls.pid); s0.BusyTime != 50*ms {
		t.Errorf("GPU 0's slot after its work: %+v, want 50 ms busy", s0)
	}
	ls.wait(t)
	for i, n := range []*ctl.Node{n0, n1} {
		if _, ok := busyOf(n, ls.pid); ok {
			t.Errorf("GPU %d: the LS tenant that exited kept its slot", i)
		}
	}
}
