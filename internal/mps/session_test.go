package mps

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/mps/mpstest"
)

// TestStartsInSessionOfItsOwn: the control daemon Start starts is in a
// session (and so a process group) of its own, so that a signal to the
// starter's group, as timeout or ^C at a terminal sends, leaves MPS
// running for its clients (the stand-in, like a daemon that does not
// detach itself, would otherwise be in the test's).
func TestStartsInSessionOfItsOwn(t *testing.T) {
	d := Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	mine, theirs := groups(t, os.Getpid()), groups(t, d.PID())
	if theirs[0] == mine[0] || theirs[1] == mine[1] {
		t.Errorf("MPS (pid %d) has process group and session %v, the test %v: want others", d.PID(), theirs, mine)
	}
}

// groups are process pid's process group and session, from /proc.
func groups(t *testing.T, pid int) [2]int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp session ...
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var g [2]int
	if _, err := fmt.Sscan(f[2]+" "+f[3], &g[0], &g[1]); err != nil {
		t.Fatal(err)
	}
	return g
}
