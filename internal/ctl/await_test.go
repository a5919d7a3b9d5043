// Tests of AwaitLaunch: a launch counted, a process that ended, no block.

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
	var naps []time.Duration
	s, err := ctl.AwaitLaunch(h.Path, 50*time.Millisecond, func(d time.Duration) {
		if naps = append(naps, d); len(naps) == 3 {
			atomic.AddUint64(&ctl.BlockOf(h).Launches, 1)
		}
	})
	if s.Launches != 1 || s.PID != os.Getpid() || err != nil || len(naps) != 3 || naps[0] != 50*time.Millisecond {
		t.Errorf("AwaitLaunch: %d launches of pid %d, %v after naps %v; want 1 of %d after 3 of 50ms (the launch counted in the third)",
			s.Launches, s.PID, err, naps, os.Getpid())
	}

	gone := ctltest.EndedBlock(t, dir)
	naps = nil
	s, err = ctl.AwaitLaunch(gone.Path, time.Millisecond, func(d time.Duration) { naps = append(naps, d) })
	if s.Launches != 0 || s.Alive() || err != nil || len(naps) != 0 {
		t.Errorf("AwaitLaunch of a process that ended with no launch: %d launches, alive %v, %v after %d naps; want none, ended, at once",
			s.Launches, s.Alive(), err, len(naps))
	}
	if _, err := ctl.AwaitLaunch(dir+"/none", time.Millisecond, func(time.Duration) { t.Fatal("napped without a block") }); err == nil {
		t.Error("AwaitLaunch of no block: no error")
	}
}
