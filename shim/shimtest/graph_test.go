// The tests of graph.c: executable graphs, whose kernel nodes the fake
// runs on the descriptors written when the graph was instantiated (as the
// hardware does), launch on the current mask after carve set moves it,
// computing what they did, and those that cannot keep their mask and are
// counted.

package shimtest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// replayLine is what the driver says of a replay of kernel nodes of the
// values given on mask m.
func replayLine(m [4]uint32, values ...int) string {
	s := fmt.Sprintf("ran %d mask %08x %08x %08x %08x values ", len(values), m[0], m[1], m[2], m[3])
	for i, v := range values {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(v)
	}
	return s
}

// fakeGraphs: the fake's graphs and executable graphs alive, and its
// instantiations so far.
func fakeGraphs(t *testing.T, p *proc) (graphs, execs, inst int) {
	t.Helper()
	got := p.ask(t, "grcount")
	if _, err := fmt.Sscanf(got, "graphs %d execs %d inst %d", &graphs, &execs, &inst); err != nil {
		t.Fatalf("grcount: %q", got)
	}
	return
}

func mustAsk(t *testing.T, p *proc, cmd, want string) {
	t.Helper()
	if got := p.ask(t, cmd); got != want {
		t.Fatalf("%s: %q, want %q", cmd, got, want)
	}
}

func setMask(t *testing.T, h *ctl.Handle, m [4]uint32) {
	t.Helper()
	if _, err := h.SetMask(m, 4); err != nil {
		t.Fatal(err)
	}
}

// TestGraphFollowsTheMask: a graph instantiated on mask A replays on A;
// after a move to B its next replay runs on B, computing the same, from
// a copy instantiated once (its graph destroyed after instantiation, as
// PyTorch's is); replays with no move instantiate nothing; an upload
// after a move makes the copy too.
func TestGraphFollowsTheMask(t *testing.T) {
	a, b, c := enableOnly(0, 1), enableOnly(2, 3, 9), enableOnly(10, 11)
	p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: a, Live: live, SMs: 4}}})
	p.ready(t)
	mustAsk(t, p, "grmake 4 drop", "graph 0")
	_, _, inst := fakeGraphs(t, p)
	mustAsk(t, p, "grlaunch 0", replayLine(a, 100, 101, 102, 103))
	setMask(t, h, b)
	mustAsk(t, p, "klaunch kernel", maskLine(b))
	for i := range 3 {
		if got, want := p.ask(t, "grlaunch 0"), replayLine(b, 100, 101, 102, 103); got != want {
			t.Fatalf("replay %d after the move: %q, want %q", i, got, want)
		}
	}
	if _, _, n := fakeGraphs(t, p); n != inst+1 {
		t.Errorf("instantiations after a move and 3 replays: %d, want %d (one copy)", n, inst+1)
	}
	setMask(t, h, c)
	mustAsk(t, p, "grlaunch 0 upload", replayLine(c, 100, 101, 102, 103))
	if _, _, n := fakeGraphs(t, p); n != inst+2 {
		t.Errorf("instantiations after a second move: %d, want %d", n, inst+2)
	}
	if s := h.Snapshot(); s.GraphsRemade != 2 || s.GraphsKept != 0 {
		t.Errorf("graphs remade %d kept %d, want 2 and 0", s.GraphsRemade, s.GraphsKept)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d; stderr %s", code, p.stderr)
	}
}

// TestGraphKeepsTheTenantsChanges: the tenant's changes of its executable
// graph's kernel nodes, before and after a move, and an update from
// another graph, hold in the copies instantiated after each move, a
// change after the update naming a node of the graph first instantiated
// too.
func TestGraphKeepsTheTenantsChanges(t *testing.T) {
	a, b, c, d := enableOnly(0, 1), enableOnly(2, 3), enableOnly(9, 10), enableOnly(11, 12)
	p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: a, Live: live, SMs: 4}}})
	p.ready(t)
	graphs, execs, _ := fakeGraphs(t, p)
	mustAsk(t, p, "grmake 3", "graph 0")
	mustAsk(t, p, "grset 0 2 7", "rc 0") // before any move: into the clone alone
	setMask(t, h, b)
	mustAsk(t, p, "grlaunch 0", replayLine(b, 100, 101, 7))
	_, _, inst := fakeGraphs(t, p)
	mustAsk(t, p, "grset 0 1 555", "rc 0") // after the move: into the copy too
	mustAsk(t, p, "grlaunch 0", replayLine(b, 100, 555, 7))
	if _, _, n := fakeGraphs(t, p); n != inst {
		t.Errorf("a change of a node instantiated anew: %d instantiations, want %d", n, inst)
	}
	setMask(t, h, c)
	mustAsk(t, p, "grlaunch 0", replayLine(c, 100, 555, 7))
	mustAsk(t, p, "grupdate 0 1000", "rc 0")
	mustAsk(t, p, "grlaunch 0", replayLine(c, 1100, 1555, 1007))
	setMask(t, h, d)
	mustAsk(t, p, "grlaunch 0", replayLine(d, 1100, 1555, 1007))
	if s := h.Snapshot(); s.GraphsKept != 0 || s.GraphsRemade != 4 {
		t.Errorf("graphs kept %d remade %d, want 0 and 4", s.GraphsKept, s.GraphsRemade)
	}
	// a node named by its handle in the graph instantiated, not in the
	// one it was updated from, is found by its place in the graph: the
	// copy takes the change, and the graph follows the next move
	mustAsk(t, p, "grset 0 0 9", "rc 0")
	mustAsk(t, p, "grlaunch 0", replayLine(d, 9, 1555, 1007))
	setMask(t, h, b)
	mustAsk(t, p, "grlaunch 0", replayLine(b, 9, 1555, 1007))
	if s := h.Snapshot(); s.GraphsKept != 0 || s.GraphsRemade != 5 {
		t.Errorf("graphs kept %d remade %d, want 0 and 5", s.GraphsKept, s.GraphsRemade)
	}
	mustAsk(t, p, "grdel 0", "rc 0")
	if g, e, _ := fakeGraphs(t, p); g != graphs || e != execs {
		t.Errorf("destroyed after an update: graphs %d execs %d, want %d and %d (its clones and copy gone)", g, e, graphs, execs)
	}
	p.wait(t)
}

// TestGraphNotFollowedKeepsItsMask: a graph with memory nodes, or one
// instantiated for device launch, launches itself on the mask it was
// instantiated under, counted once a move, and said on stderr.
func TestGraphNotFollowedKeepsItsMask(t *testing.T) {
	for _, how := range []string{"mem", "device"} {
		t.Run(how, func(t *testing.T) {
			a, b, c := enableOnly(0, 1), enableOnly(2, 3), enableOnly(9, 10)
			p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: a, Live: live, SMs: 4}}})
			p.ready(t)
			mustAsk(t, p, "grmake 2 "+how, "graph 0")
			graphs, execs, inst := fakeGraphs(t, p)
			setMask(t, h, b)
			for range 3 {
				mustAsk(t, p, "grlaunch 0", replayLine(a, 100, 101))
			}
			if s := h.Snapshot(); s.GraphsKept != 1 || s.GraphsRemade != 0 {
				t.Errorf("after a move and 3 replays: graphs kept %d remade %d, want 1 and 0", s.GraphsKept, s.GraphsRemade)
			}
			setMask(t, h, c)
			mustAsk(t, p, "grlaunch 0", replayLine(a, 100, 101))
			if s := h.Snapshot(); s.GraphsKept != 2 {
				t.Errorf("after a second move: graphs kept %d, want 2", s.GraphsKept)
			}
			if g, e, n := fakeGraphs(t, p); g != graphs || e != execs || n != inst {
				t.Errorf("a graph kept on its mask made graphs %d->%d, execs %d->%d, instantiations %d->%d", graphs, g, execs, e, inst, n)
			}
			p.wait(t)
			if !strings.Contains(p.stderr.String(), "keeps the partition it was instantiated under") ||
				!strings.Contains(p.stderr.String(), "graphs_kept in carve ls -o json") {
				t.Errorf("no word of the kept graph on stderr: %q", p.stderr)
			}
		})
	}
}

// TestGraphDestroyFreesItsCopies: an executable graph's clone and copy go
// with it; a copy made anew replaces the last.
func TestGraphDestroyFreesItsCopies(t *testing.T) {
	p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live, SMs: 4}}})
	p.ready(t)
	graphs, execs, _ := fakeGraphs(t, p)
	mustAsk(t, p, "grmake 2 drop", "graph 0")
	if g, e, _ := fakeGraphs(t, p); g != graphs+1 || e != execs+1 {
		t.Errorf("instantiated: graphs %d execs %d, want %d (its clone) and %d", g, e, graphs+1, execs+1)
	}
	for i, m := range [][4]uint32{enableOnly(2, 3), enableOnly(9, 10), enableOnly(0, 1)} {
		setMask(t, h, m)
		mustAsk(t, p, "grlaunch 0", replayLine(m, 100, 101))
		if g, e, _ := fakeGraphs(t, p); g != graphs+1 || e != execs+2 {
			t.Errorf("move %d: graphs %d execs %d, want %d and %d (one copy)", i, g, e, graphs+1, execs+2)
		}
	}
	mustAsk(t, p, "grdel 0", "rc 0")
	if g, e, _ := fakeGraphs(t, p); g != graphs || e != execs {
		t.Errorf("destroyed: graphs %d execs %d, want %d and %d", g, e, graphs, execs)
	}
	p.wait(t)
}

// TestGraphReplaysAcrossMoves: many replays of two graphs across moves,
// some to the mask already held: each replay runs on the current mask
// with its values, and a graph is instantiated anew only when its mask
// changed.
func TestGraphReplaysAcrossMoves(t *testing.T) {
	masks := [][4]uint32{enableOnly(0, 1), enableOnly(2, 3), enableOnly(2, 3), enableOnly(9, 10, 11), enableOnly(0, 1),
		enableOnly(0, 1), enableOnly(12, 13), enableOnly(14, 15, 16), enableOnly(2, 3)}
	p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: masks[0], Live: live, SMs: 4}}})
	p.ready(t)
	mustAsk(t, p, "grmake 5 drop", "graph 0")
	mustAsk(t, p, "grmake 1", "graph 1")
	_, _, inst := fakeGraphs(t, p)
	changes := 0
	for i, m := range masks {
		if i > 0 {
			setMask(t, h, m)
			if m != masks[i-1] {
				changes++
			}
		}
		for r := range 4 {
			if got, want := p.ask(t, "grlaunch 0"), replayLine(m, 100, 101, 102, 103, 104); got != want {
				t.Fatalf("mask %d, replay %d of graph 0: %q, want %q", i, r, got, want)
			}
			if got, want := p.ask(t, "grlaunch 1"), replayLine(m, 100); got != want {
				t.Fatalf("mask %d, replay %d of graph 1: %q, want %q", i, r, got, want)
			}
		}
	}
	if _, _, n := fakeGraphs(t, p); n != inst+2*changes {
		t.Errorf("instantiations: %d, want %d (two graphs, %d changes of the mask)", n, inst+2*changes, changes)
	}
	if s := h.Snapshot(); s.GraphsRemade != uint64(2*changes) {
		t.Errorf("graphs remade %d, want %d", s.GraphsRemade, 2*changes)
	}
	p.wait(t)
}

// TestGraphOnOneGPU: a graph instantiated on GPU 0 is not instantiated
// anew when the tenant's partition on GPU 1 moves, and follows GPU 0's.
func TestGraphOnOneGPU(t *testing.T) {
	p, h := startExec(t, t.TempDir(), twoGPUs(0))
	p.ready(t)
	mustAsk(t, p, "grmake 2", "graph 0")
	_, _, inst := fakeGraphs(t, p)
	if _, err := h.SetPartMask(fakeGPU1, enableOnly(18, 19), 4); err != nil {
		t.Fatal(err)
	}
	mustAsk(t, p, "grlaunch 0", replayLine(enableOnly(0, 1), 100, 101))
	if _, _, n := fakeGraphs(t, p); n != inst {
		t.Errorf("GPU 1's move instantiated GPU 0's graph anew: %d instantiations, want %d", n, inst)
	}
	if _, err := h.SetPartMask(fakeGPU0, enableOnly(2, 3), 4); err != nil {
		t.Fatal(err)
	}
	mustAsk(t, p, "grlaunch 0", replayLine(enableOnly(2, 3), 100, 101))
	p.wait(t)
}

// TestGraphOfBEMovedBesideBusyLS: a BE tenant's graph moved while an LS
// tenant is busy, its launches narrowed off the LS tenant's TPCs, is
// instantiated anew on the BE's whole new partition: narrowing is a
// launch's, and the graph, replayed with the LS idle, runs on all of it.
// So is a graph the tenant instantiates right after a narrowed launch.
func TestGraphOfBEMovedBesideBusyLS(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beOn(t, c, dir, ctl.Tide{Share: 1, Epoch: 20 * time.Millisecond})
	if got := be.say(t, "grmake 2"); got != "graph 0" {
		t.Fatalf("grmake: %q", got)
	}
	ls.set(true)
	narrowed := enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16)
	if got := be.say(t, "klaunch kernel"); got != maskLine(narrowed) {
		t.Fatalf("BE launch beside the busy LS: %q, want %q", got, maskLine(narrowed))
	}
	b := enableOnly(0, 1, 2, 3, 9, 10, 11, 12, 13, 14)
	setMask(t, h, b)
	if got := be.say(t, "grlaunch 0"); got != replayLine(b, 100, 101) {
		t.Errorf("the graph's launch after the move, the LS busy: %q, want %q", got, replayLine(b, 100, 101))
	}
	if got := be.say(t, "grmake 1"); got != "graph 1" {
		t.Fatalf("grmake: %q", got)
	}
	ls.set(false)
	for i, want := range []string{replayLine(b, 100, 101), replayLine(b, 100)} {
		if got := be.say(t, fmt.Sprintf("grlaunch %d", i)); got != want {
			t.Errorf("graph %d replayed with the LS idle: %q, want %q (the whole partition)", i, got, want)
		}
	}
	if s := h.Snapshot(); s.GraphsRemade != 1 || s.GraphsKept != 0 {
		t.Errorf("graphs remade %d kept %d, want 1 and 0", s.GraphsRemade, s.GraphsKept)
	}
}

// TestGraphInItsContext: a graph is instantiated anew in the context it
// was instantiated in, whichever is current at its launch; one whose
// context is gone keeps its mask, counted.
func TestGraphInItsContext(t *testing.T) {
	p, h := startExec(t, t.TempDir(), twoGPUs(0))
	p.ready(t)
	mustAsk(t, p, "grmake 2", "graph 0")
	mustAsk(t, p, "ctx 1", "rc 0")
	b := enableOnly(2, 3)
	if _, err := h.SetPartMask(fakeGPU0, b, 4); err != nil {
		t.Fatal(err)
	}
	mustAsk(t, p, "grlaunch 0", replayLine(b, 100, 101))
	mustAsk(t, p, "ctx 0", "rc 0")
	mustAsk(t, p, "ctxnew 0", "ctx 2")
	mustAsk(t, p, "grmake 2", "graph 1")
	mustAsk(t, p, "ctxdel", "rc 0")
	mustAsk(t, p, "ctx 0", "rc 0")
	if _, err := h.SetPartMask(fakeGPU0, enableOnly(9, 10), 4); err != nil {
		t.Fatal(err)
	}
	mustAsk(t, p, "grlaunch 1", replayLine(b, 100, 101))
	mustAsk(t, p, "grlaunch 1", replayLine(b, 100, 101))
	// back on the mask its nodes hold: neither counted nor tried again
	if _, err := h.SetPartMask(fakeGPU0, b, 4); err != nil {
		t.Fatal(err)
	}
	mustAsk(t, p, "grlaunch 1", replayLine(b, 100, 101))
	if s := h.Snapshot(); s.GraphsRemade != 1 || s.GraphsKept != 1 {
		t.Errorf("graphs remade %d kept %d, want 1 and 1 (the graph whose context went, once)", s.GraphsRemade, s.GraphsKept)
	}
	p.wait(t)
}
