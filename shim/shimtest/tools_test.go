// The launch-tools table shared with profilers (shim/tools.c): a profiler
// that subscribes as CUPTI does, or is injected at cuInit, gets the
// callbacks, and launches keep their mask while it comes and goes.

package shimtest_test

import (
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestProfilerSharesTheCallback: a profiler that subscribes to the driver's
// callbacks the way CUPTI does gets them, launches keep their mask, and
// after it unsubscribes the mask is still applied.
func TestProfilerSharesTheCallback(t *testing.T) {
	mask := enableOnly(1, 2)
	p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: mask, Live: live}}})
	p.ready(t)
	if got := p.ask(t, "profiler"); got != "rc 0" {
		t.Fatalf("the profiler's subscription: %q", got)
	}
	for _, cmd := range []string{"klaunch kernel", "klaunch ex", "klaunch graph"} {
		if got := p.ask(t, cmd); got != maskLine(mask) {
			t.Errorf("%s beside the profiler: %q", cmd, got)
		}
	}
	p.ask(t, "sync")
	if got := p.ask(t, "profiled"); got != "profiled 3 2" {
		t.Errorf("the profiler saw %q, want 3 launches and 2 other callbacks (one enabled by an entry the shim passes through)", got)
	}
	// the profiler turns launches off (as ncu does, entry 7): the mask stays
	if got := p.ask(t, "quiet"); got != "rc 0" {
		t.Errorf("turning the launch domain off: %q", got)
	}
	if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
		t.Errorf("after the profiler turned launches off: %q", got)
	}
	if got := p.ask(t, "unprofile"); got != "rc 0" {
		t.Errorf("unsubscribing: %q", got)
	}
	if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
		t.Errorf("after the profiler left: %q", got)
	}
	if got := p.ask(t, "profiled"); got != "profiled 3 2" {
		t.Errorf("the profiler was called after it unsubscribed: %q", got)
	}
	if s := h.Snapshot(); s.Launches != 5 {
		t.Errorf("the shim counted %d launches, want 5", s.Launches)
	}
	p.wait(t)
}

// TestInjectionAtInit: a profiler injected by the driver at cuInit (as
// Nsight Compute's is) subscribes before the shim; both get the launches.
// One that bypasses the shared table leaves the shim no callback, and the
// shim refuses to run unpartitioned, saying why.
func TestInjectionAtInit(t *testing.T) {
	mask := enableOnly(3)
	p, _ := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: mask, Live: live}}}, "FAKECUDA_NEED_INIT=1", "FAKECUDA_INJECT=1")
	p.ready(t)
	if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
		t.Errorf("launch beside the injection: %q", got)
	}
	if got := p.ask(t, "injected"); got != "injected 1" {
		t.Errorf("the injection saw %q", got)
	}
	p.wait(t)

	p, _ = startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: mask, Live: live}}}, "FAKECUDA_NEED_INIT=1", "FAKECUDA_INJECT=2")
	if code := p.wait(t); code != 86 || !strings.Contains(p.stderr.String(), "another tool holds the driver's launch callbacks") {
		t.Errorf("beside an injection that bypassed the shared table: exit %d, stderr %q", code, p.stderr)
	}
}

// TestProfilerComesAndGoesUnderLoad: while four threads launch kernels, a
// profiler subscribes and unsubscribes again and again; every launch still
// goes out with a callback (and so its mask).
func TestProfilerComesAndGoesUnderLoad(t *testing.T) {
	p, h := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: enableOnly(0, 9), Live: live}}})
	p.ready(t)
	if got := p.ask(t, "storm 20000"); got != "bare 0" {
		t.Errorf("launches that went out without the callback: %q", got)
	}
	if got := h.Snapshot().Launches; got != 80000 {
		t.Errorf("the shim saw %d launches, want 80000", got)
	}
	p.wait(t)
}
