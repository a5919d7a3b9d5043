// Tests of Watch: a launch counted, a process that ended, a claim's
// process known by its lock alone, no block.

package ctl_test

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
)

// TestAwaitLaunch: AwaitLaunch returns at the first look that finds a
// launch counted, looking every poll meanwhile; with none counted once the
// process has ended with none; an error where there is no block.
func TestAwaitLaunch(t *testing.T) {
	dir := t.TempDir()
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	w, err := ctl.WatchBlock(h.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var naps []time.Duration
	n, err := w.AwaitLaunch(50*time.Millisecond, func(d time.Duration) {
		if naps = append(naps, d); len(naps) == 3 {
			atomic.AddUint64(&ctl.BlockOf(h).Launches, 1)
		}
	})
	if n != 1 || err != nil || len(naps) != 3 || naps[0] != 50*time.Millisecond || !w.Running() {
		t.Errorf("AwaitLaunch: %d launches, %v after naps %v, running %v; want 1 after 3 of 50ms (the launch counted in the third), running",
			n, err, naps, w.Running())
	}

	gone, err := ctl.WatchBlock(ctltest.EndedBlock(t, dir).Path)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	naps = nil
	n, err = gone.AwaitLaunch(time.Millisecond, func(d time.Duration) { naps = append(naps, d) })
	if n != 0 || gone.Running() || err != nil || len(naps) != 0 {
		t.Errorf("AwaitLaunch of a process that ended with no launch: %d launches, running %v, %v after %d naps; want none, ended, at once",
			n, gone.Running(), err, len(naps))
	}
	if _, err := ctl.WatchBlock(dir + "/none"); err == nil {
		t.Error("WatchBlock of no block: no error")
	}
}

// TestWatchClaimProcess: a claim's process is named by its pid in its
// container, which means nothing here (the pid of a process that ended):
// it runs while a process holds the lock on its block, as its shim does,
// and has ended once that process has.
func TestWatchClaimProcess(t *testing.T) {
	h := ctltest.EndedBlock(t, t.TempDir())
	release := ctltest.HoldLock(t, h.Path)
	w, err := ctl.WatchBlock(h.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	naps := 0
	n, err := w.AwaitLaunch(time.Millisecond, func(time.Duration) {
		if naps++; naps == 5 {
			atomic.AddUint64(&ctl.BlockOf(h).Launches, 1)
		}
	})
	if n != 1 || err != nil || naps != 5 || !w.Running() {
		t.Errorf("a claim's process holding its block's lock: %d launches after %d naps (%v), running %v; want 1 after 5, running", n, naps, err, w.Running())
	}
	release()
	if w.Running() {
		t.Error("running after the lock's holder exited")
	}
}
