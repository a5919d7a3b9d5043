// Tests of mps.go's process handling: the control daemon in a session of
// its own, and a killed one not yet reaped not taken for running.

package mps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestZombieIsNotRunning: a control daemon that was killed but not yet
// reaped by its parent (a zombie: signals still reach it, its name is
// still read) is not running, so that no daemon adopts it and no client is
// sent to it.
func TestZombieIsNotRunning(t *testing.T) {
	d := Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
	if err := os.MkdirAll(d.PipeDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	// the stand-in, run without a pipe directory, exits at once: with the
	// control program's name, and a child of this test, which reaps it last
	c := exec.Command(d.Control)
	c.Env = []string{}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !ended(c.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not end within 10 s", c.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(d.PipeDir(), "nvidia-cuda-mps-control.pid"), []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if d.Running() {
		t.Errorf("a zombie control daemon (pid %d) counts as running", c.Process.Pid)
	}
}
