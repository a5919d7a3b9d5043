// The first fault a driver call returns, recorded in the block (shim/fault.c).

package shimtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestFaultRecorded: the first call that returns a fault is recorded in
// the block, and the block outlives the process for carve ls.
func TestFaultRecorded(t *testing.T) {
	dir := t.TempDir()
	p, h := startExec(t, dir, ctl.Init{Comm: []string{"faulty"}, Parts: []ctl.Part{{Mask: enableOnly(0), Live: live}}}, "FAKECUDA_FAULT_AT=2")
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
