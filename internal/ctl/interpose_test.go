package ctl_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// ask sends one command to the driver and returns its answer.
func (p *proc) ask(t testing.TB, cmd string) string {
	t.Helper()
	fmt.Fprintln(p.in, cmd)
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: driver died: %v; stderr: %s", cmd, err, p.stderr)
	}
	return strings.TrimSpace(line)
}

func maskLine(m [4]uint32) string {
	return fmt.Sprintf("mask %08x %08x %08x %08x 1 1", m[0], m[1], m[2], m[3])
}

// TestInterposedLaunchesKeepTheMask: the mask is applied to launches made
// through every entry point a framework reaches by cuGetProcAddress (both
// flavours of the default stream) and through the exported names.
func TestInterposedLaunchesKeepTheMask(t *testing.T) {
	mask := enableOnly(0, 9)
	p, _ := startExec(t, t.TempDir(), ctl.Init{Mask: mask, Live: live, SMs: 4})
	p.ready(t)
	for _, cmd := range []string{"klaunch kernel", "klaunch kernel ptds", "klaunch ex", "klaunch ex ptds",
		"klaunch coop", "klaunch graph", "direct"} {
		if got := p.ask(t, cmd); got != maskLine(mask) {
			t.Errorf("%s: %q, want %q", cmd, got, maskLine(mask))
		}
	}
	if got := p.ask(t, "next"); got != "next same" {
		t.Errorf("dlsym(RTLD_NEXT) from the program under the shim: %q", got)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d; stderr %s", code, p.stderr)
	}
}

// TestReportedSMs: the program is told its partition's SM count, unless
// carve run was given --all-sms; a resize changes what later queries see.
func TestReportedSMs(t *testing.T) {
	dir := t.TempDir()
	p, h := startExec(t, dir, ctl.Init{Mask: enableOnly(0, 1), Live: live, SMs: 4})
	p.ready(t)
	if got := p.ask(t, "sms"); got != "sms 4 rc 0" {
		t.Errorf("partition of 2 TPCs: %q, want 4 SMs", got)
	}
	if _, err := h.SetMask(enableOnly(0, 1, 2, 3, 9), 10); err != nil {
		t.Fatal(err)
	}
	if got := p.ask(t, "sms"); got != "sms 10 rc 0" {
		t.Errorf("after a resize to 5 TPCs: %q, want 10 SMs", got)
	}
	p.wait(t)

	p, _ = startExec(t, dir, ctl.Init{Mask: enableOnly(0, 1), Live: live, SMs: 4, Flags: ctl.FlagAllSMs})
	p.ready(t)
	if got := p.ask(t, "sms"); got != "sms 132 rc 0" {
		t.Errorf("--all-sms: %q, want the whole GPU's 132", got)
	}
	p.wait(t)
}

// TestFaultRecorded: the first call that returns a fault is recorded in
// the block, and the block outlives the process for carve ls.
func TestFaultRecorded(t *testing.T) {
	dir := t.TempDir()
	p, h := startExec(t, dir, ctl.Init{Mask: enableOnly(0), Live: live, Comm: []string{"faulty"}}, "FAKECUDA_FAULT_AT=2")
	p.ready(t)
	before := time.Now()
	p.ask(t, "klaunch kernel")
	p.ask(t, "klaunch kernel") // this one faults on the GPU
	if got := p.ask(t, "sync"); got != "rc 700" {
		t.Fatalf("sync after the fault: %q", got)
	}
	if got := p.ask(t, "klaunch ex"); got != "rc 700" {
		t.Fatalf("a launch after the fault: %q", got)
	}
	f := h.Snapshot().Fault
	if f.Code != 700 || f.Name() != "CUDA_ERROR_ILLEGAL_ADDRESS" || f.Call != "cuStreamSynchronize" ||
		f.At.Before(before.Add(-time.Second)) || time.Since(f.At) > time.Minute {
		t.Errorf("fault recorded %+v, want the illegal address at cuStreamSynchronize, just now", f)
	}
	p.wait(t)
	if !strings.Contains(p.stderr.String(), "cuStreamSynchronize returned 700") {
		t.Errorf("the shim did not say what happened: %s", p.stderr)
	}
	live, ended, err := ctl.Scan(dir)
	if err != nil || len(live) != 0 || len(ended) != 1 || ended[0].Fault.Code != 700 || ended[0].Command[0] != "faulty" {
		t.Errorf("after exit: live %v, ended %v, %v", live, ended, err)
	}
}

// TestProfilerSharesTheCallback: a profiler that subscribes to the driver's
// callbacks the way CUPTI does gets them, launches keep their mask, and
// after it unsubscribes the mask is still applied.
func TestProfilerSharesTheCallback(t *testing.T) {
	mask := enableOnly(1, 2)
	p, h := startExec(t, t.TempDir(), ctl.Init{Mask: mask, Live: live})
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
	p, _ := startExec(t, t.TempDir(), ctl.Init{Mask: mask, Live: live}, "FAKECUDA_NEED_INIT=1", "FAKECUDA_INJECT=1")
	p.ready(t)
	if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
		t.Errorf("launch beside the injection: %q", got)
	}
	if got := p.ask(t, "injected"); got != "injected 1" {
		t.Errorf("the injection saw %q", got)
	}
	p.wait(t)

	p, _ = startExec(t, t.TempDir(), ctl.Init{Mask: mask, Live: live}, "FAKECUDA_NEED_INIT=1", "FAKECUDA_INJECT=2")
	if code := p.wait(t); code != 86 || !strings.Contains(p.stderr.String(), "another tool holds the driver's launch callbacks") {
		t.Errorf("beside an injection that bypassed the shared table: exit %d, stderr %q", code, p.stderr)
	}
}

// TestProfilerComesAndGoesUnderLoad: while four threads launch kernels, a
// profiler subscribes and unsubscribes again and again; every launch still
// goes out with a callback (and so its mask).
func TestProfilerComesAndGoesUnderLoad(t *testing.T) {
	p, h := startExec(t, t.TempDir(), ctl.Init{Mask: enableOnly(0, 9), Live: live})
	p.ready(t)
	if got := p.ask(t, "storm 20000"); got != "bare 0" {
		t.Errorf("launches that went out without the callback: %q", got)
	}
	if got := h.Snapshot().Launches; got != 80000 {
		t.Errorf("the shim saw %d launches, want 80000", got)
	}
	p.wait(t)
}
