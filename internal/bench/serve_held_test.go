// Tests of the serve benchmark's held reference (serve_held.go).

package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
)

// tenant makes a block of class in dir for a live process of its own.
func tenant(t *testing.T, dir string, class uint32) (pid int, h *ctl.Handle) {
	t.Helper()
	pid, _ = ctltest.Sleeper(t)
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Comm: []string{"x"}, Class: class, Parts: []ctl.Part{{Live: [4]uint32{0xffff}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return pid, h
}

// TestHoldBE: the BE tenant of the pid is paused HoldFor past the clock at
// once and renewed as the clock moves (waited for, each HoldEvery), no
// other tenant is; stop ends the pause, says no error, and a second stop
// does nothing. A pid with no BE block is an error that stop says.
func TestHoldBE(t *testing.T) {
	dir := t.TempDir()
	pid, be := tenant(t, dir, ctl.ClassBE)
	_, other := tenant(t, dir, ctl.ClassBE)
	var now atomic.Int64
	now.Store(int64(time.Hour))
	mono := func() time.Duration { return time.Duration(now.Load()) }
	stop := holdBE(dir, pid, mono)
	if got := be.Snapshot().TideStatus.PauseUntil; got != time.Hour+HoldFor {
		t.Errorf("paused until %v at once, want %v", got, time.Hour+HoldFor)
	}
	now.Store(int64(2 * time.Hour))
	for i := 0; be.Snapshot().TideStatus.PauseUntil != 2*time.Hour+HoldFor; i++ {
		if i == 1000 {
			t.Fatalf("the pause not renewed in %v: until %v", 1000*HoldEvery/10, be.Snapshot().TideStatus.PauseUntil)
		}
		time.Sleep(HoldEvery / 10)
	}
	if got := other.Snapshot().TideStatus.PauseUntil; got != 0 {
		t.Errorf("another BE tenant paused until %v", got)
	}
	if err := stop(); err != nil || be.Snapshot().TideStatus.PauseUntil != 0 {
		t.Errorf("stopped: %v, paused until %v", err, be.Snapshot().TideStatus.PauseUntil)
	}
	be.Pause(time.Hour) // a second stop writes nothing
	if err := stop(); err != nil || be.Snapshot().TideStatus.PauseUntil != time.Hour {
		t.Errorf("stopped again: %v, paused until %v", err, be.Snapshot().TideStatus.PauseUntil)
	}
	if err := holdBE(dir, pid+1<<20, mono)(); err == nil || !strings.Contains(err.Error(), "no BE tenant") {
		t.Errorf("no such tenant: %v", err)
	}
}

// TestHeldSetup: --mechanisms held is accepted, not run by default, and
// makes one setup whose LS and BE run under carve run with no SLO, held;
// a held run whose BE has no block says so as its note.
func TestHeldSetup(t *testing.T) {
	got := (&Env{}).serveSetups(ServeOptions{Mechanisms: []string{ServeHeld}, LSTPCs: 16})
	if len(got) != 1 || !got[0].held || got[0].slo != (ctl.SLO{}) || !strings.Contains(strings.Join(got[0].lsPre, " "), "--ls -n 16") ||
		!strings.Contains(strings.Join(got[0].bePre, " "), "--be") {
		t.Fatalf("setups %+v", got)
	}
	if slices.Contains(ServeMechanisms, ServeHeld) {
		t.Errorf("held is run by default")
	}
	dir := t.TempDir()
	rt := filepath.Join(dir, "run")
	os.Mkdir(rt, 0o700)
	t.Setenv("CARVE_RUNTIME_DIR", rt)
	ls := filepath.Join(dir, "ls")
	os.WriteFile(ls, []byte("#!/bin/sh\necho ready; read go; echo '{\"latencies_ms\": [1.5, 2.5, 9], \"requests\": 3}'\n"), 0o755)
	be := filepath.Join(dir, "be")
	os.WriteFile(be, []byte("#!/bin/sh\necho ready; read go; echo '{\"items\": 640, \"unit\": \"images\", \"seconds\": 2}'\n"), 0o755)
	m, err := Workers{}.runServe(setup{withLS: true, withBE: true, held: true}, []string{ls}, []string{be}, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.holdErr == nil || !strings.Contains(m.holdErr.Error(), "no BE tenant") {
		t.Errorf("a held run with no BE block: %v", m.holdErr)
	}
}
