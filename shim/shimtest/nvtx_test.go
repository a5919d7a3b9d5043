// An LS tenant's requests as its program marks them with NVTX ranges
// (shim/nvtx.c): the driver program makes its ranges as a library built
// with NVTX's headers does (shim/test/driver/nvtx.c), through the tool
// NVTX_INJECTION64_PATH names, on a virtual clock, so that each range
// lasts exactly what the test says.

package shimtest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// markedOn starts the driver as an LS tenant whose requests are the NVTX
// ranges named mark, with env added to its environment.
func markedOn(t *testing.T, mark string, env ...string) (*vproc, *ctl.Handle, *shimtest.Clock) {
	t.Helper()
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 100*us)
	in := ctl.Init{Class: ctl.ClassLS, Tide: ctl.Tide{Mark: mark}, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}}
	p, h := startOn(t, c, dir, "LS", in, env...)
	return p, h, c
}

// ranges has p run each of the commands, the clock moved by step after
// each, and checks each answer against want's (one each; "" for any).
func ranges(t *testing.T, p *vproc, c *shimtest.Clock, step time.Duration, cmds []string, want []string) {
	t.Helper()
	for i, cmd := range cmds {
		if got := p.say(t, "nvtx "+cmd); want[i] != "" && got != want[i] {
			t.Fatalf("nvtx %s: %q, want %q", cmd, got, want[i])
		}
		c.RunFor(step)
	}
}

// TestNVTXMarkedRanges: with the mark "request", the ranges of that
// message, pushed and popped (ASCII, wide, with attributes, in a domain of
// their own as a registered string) or started and ended, are timed from
// their push or start to their pop or end, nested or interleaved as they
// may be; the ranges of other messages ("requests" too) are not.
func TestNVTXMarkedRanges(t *testing.T) {
	p, h, c := markedOn(t, "request")
	if st := h.Snapshot().TideStatus.MarkState; st != ctl.MarkWaiting {
		t.Errorf("before the first NVTX call: mark state %d, want %d (waiting)", st, ctl.MarkWaiting)
	}
	if got := p.say(t, "nvtx state"); got != "nvtx attached" {
		t.Fatalf("NVTX with a mark: %q, want attached (the shim names itself in NVTX_INJECTION64_PATH)", got)
	}
	if st := h.Snapshot().TideStatus.MarkState; st != ctl.MarkAttached {
		t.Errorf("after it: mark state %d, want %d (attached)", st, ctl.MarkAttached)
	}
	// each command below is followed by 1 ms
	ranges(t, p, c, ms, []string{
		"push request", "pop", // 1 ms
		"push request", "push step", "push request", "pop", "pop", "pop", // 5 ms, and 1 ms within it
		"pushw request", "pop", // 1 ms
		"pushex request", "push requests", "pop", "pop", // 3 ms
		"push requests", "pop", "pushw requests", "pop", "pushex other", "pop", // none
		"domain serving", "dpush request", "push other", "dpop", "pop", // 2 ms in the domain, interleaved with the default's
		"dpush other", "dpop", // none
	}, []string{
		"level 0", "level 0",
		"level 0", "level 1", "level 2", "level 2", "level 1", "level 0",
		"level 0", "level 0",
		"level 0", "level 1", "level 1", "level 0",
		"level 0", "level 0", "level 0", "level 0", "level 0", "level 0",
		"ok", "level 0", "level 0", "level 0", "level 0",
		"level 0", "level 0",
	})
	// started and ended, interleaved: a 4 ms and a 2 ms range
	a := startRange(t, p, "start request")
	c.RunFor(ms)
	b := startRange(t, p, "startex request")
	o := startRange(t, p, "start other")
	c.RunFor(2 * ms)
	p.say(t, "nvtx end "+b)
	p.say(t, "nvtx end "+o)
	c.RunFor(ms)
	p.say(t, "nvtx end "+a)
	p.say(t, "nvtx end "+a) // again: nothing
	st := h.Snapshot().TideStatus
	if want := histOf(ms, 5*ms, ms, ms, 3*ms, 2*ms, 4*ms, 2*ms); st.Marked != want {
		t.Errorf("marked requests %v, want %v", st.Marked, want)
	}
	if st.MarkDropped != 0 {
		t.Errorf("dropped %d, want 0", st.MarkDropped)
	}
	if st.Periods.Count() != 0 {
		t.Errorf("busy periods %v: the ranges launched nothing", st.Periods)
	}
}

// startRange starts a range by cmd and returns its id.
func startRange(t *testing.T, p *vproc, cmd string) string {
	t.Helper()
	got := p.say(t, "nvtx "+cmd)
	id, ok := strings.CutPrefix(got, "id ")
	if !ok || id == "0" {
		t.Fatalf("nvtx %s: %q, want an id", cmd, got)
	}
	return id
}

// TestNVTXMarkPrefix: a mark that ends in '*' takes every message that
// begins with what precedes it.
func TestNVTXMarkPrefix(t *testing.T) {
	p, h, c := markedOn(t, "req*")
	ranges(t, p, c, ms, []string{"push req", "pop", "push request 17", "pop", "pushw requests", "pop", "push re", "pop", "push other", "pop"},
		[]string{"level 0", "level 0", "level 0", "level 0", "level 0", "level 0", "level 0", "level 0", "level 0", "level 0"})
	if got, want := h.Snapshot().TideStatus.Marked, histOf(ms, ms, ms); got != want {
		t.Errorf("marked %v, want %v", got, want)
	}
}

// TestNVTXDropped: a matching range nested deeper than the shim keeps, or
// started while it keeps as many open, is counted as dropped, and the
// ranges around it are still timed right.
func TestNVTXDropped(t *testing.T) {
	p, h, c := markedOn(t, "request")
	const depth, open = 32, 256
	for range depth + 1 {
		p.say(t, "nvtx push request")
	}
	c.RunFor(ms)
	for i := depth; i >= 0; i-- {
		if got, want := p.say(t, "nvtx pop"), fmt.Sprintf("level %d", i); got != want {
			t.Fatalf("pop: %q, want %q", got, want)
		}
	}
	st := h.Snapshot().TideStatus
	if st.MarkDropped != 1 || st.Marked.Count() != depth {
		t.Fatalf("%d nested: %d timed, %d dropped; want %d and 1", depth+1, st.Marked.Count(), st.MarkDropped, depth)
	}
	ids := make([]string, open)
	for i := range ids {
		ids[i] = startRange(t, p, "start request")
	}
	startRange(t, p, "start request") // one more: dropped
	c.RunFor(2 * ms)
	for _, id := range ids {
		p.say(t, "nvtx end "+id)
	}
	st = h.Snapshot().TideStatus
	if st.MarkDropped != 2 || st.Marked.Count() != depth+open {
		t.Errorf("%d started: %d timed in all, %d dropped; want %d and 2", open+1, st.Marked.Count(), st.MarkDropped, depth+open)
	}
	if got := st.Marked.Counts[bucketOf(2*ms)]; got != open {
		t.Errorf("%d of the started ranges at 2 ms, want %d", got, open)
	}
}

// bucketOf is the histogram bucket that counts d.
func bucketOf(d time.Duration) int {
	i := 0
	for i < ctl.HistBuckets-1 && d >= ctl.HistBound(i) {
		i++
	}
	return i
}

// TestNVTXNoMark: a tenant without a mark leaves NVTX to itself: the shim
// names itself nowhere, and named by hand it takes nothing.
func TestNVTXNoMark(t *testing.T) {
	p, h, _ := markedOn(t, "")
	if got := p.say(t, "nvtx state"); got != "nvtx none" {
		t.Errorf("no mark: %q, want none (NVTX_INJECTION64_PATH unset)", got)
	}
	if got := p.say(t, "nvtx push request"); got != "level 0" {
		t.Errorf("push: %q", got)
	}
	if st := h.Snapshot().TideStatus; st.MarkState != ctl.MarkOff {
		t.Errorf("mark state %d, want off", st.MarkState)
	}
	p, _, _ = markedOn(t, "", "NVTX_INJECTION64_PATH="+artifacts(t).TestShim)
	if got := p.say(t, "nvtx state"); got != "nvtx refused" {
		t.Errorf("no mark, the shim named: %q, want refused", got)
	}
}

// TestNVTXOtherTool: where NVTX_INJECTION64_PATH names another tool (a
// profiler), the shim leaves it so and says so in the block.
func TestNVTXOtherTool(t *testing.T) {
	p, h, _ := markedOn(t, "request", "NVTX_INJECTION64_PATH=/nonexistent/libprofiler.so")
	if got := p.say(t, "nvtx state"); got != "nvtx unloadable" {
		t.Errorf("another tool named: %q, want unloadable (its path, as named)", got)
	}
	if st := h.Snapshot().TideStatus.MarkState; st != ctl.MarkOther {
		t.Errorf("mark state %d, want %d (another tool)", st, ctl.MarkOther)
	}
}
