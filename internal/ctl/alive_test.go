// Whether a block's process runs (Alive): a process that has exited and
// is not yet reaped has ended.

package ctl_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// zombie starts a child that exits at once and is not waited for until
// the test ends, and waits until it is a zombie.
func zombie(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Wait() })
	pid := c.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d is no zombie: %s", pid, b)
		}
	}
}

// TestZombieHasEnded: the block of a process that exited and is not yet
// reaped is not listed (its TPCs are free), with its start time recorded
// or not; a running process's is.
func TestZombieHasEnded(t *testing.T) {
	dir := t.TempDir()
	pid := zombie(t)
	for _, in := range []ctl.Init{
		{PID: pid, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}},
		{PID: os.Getpid(), Parts: []ctl.Part{{Mask: enableOnly(2, 3), Live: live}}},
	} {
		h, err := ctl.Create(dir, in)
		if err != nil {
			t.Fatal(err)
		}
		s := h.Snapshot()
		h.Close()
		if s.StartTicks == 0 {
			t.Fatalf("block of %d: no start time recorded", in.PID)
		}
		s.StartTicks = 0
		if alive := s.Alive(); alive != (in.PID == os.Getpid()) {
			t.Errorf("pid %d, no start time recorded: Alive %v", in.PID, alive)
		}
	}
	entries, err := ctl.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].PID != os.Getpid() {
		t.Errorf("listed %+v, want only this process (not zombie %d)", entries, pid)
	}
}
