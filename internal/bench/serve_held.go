// The serve benchmark's held reference (ServeHeld): the BE tenant paused
// from the LS's serving to its report, so that its process is there (an
// MPS client, its context and memory, whichever started first) and its
// kernels are not.

package bench

import (
	"sync"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// A held setup renews its BE's pause each HoldEvery, for HoldFor: a late
// renewal leaves no gap.
const (
	HoldEvery = 50 * time.Millisecond
	HoldFor   = 4 * HoldEvery
)

// hold starts the pause of s's BE process be where s is held, and
// returns what ends it (and says whether every renewal found the BE's
// block); nothing where s is not held.
func hold(s setup, be *serveProc) (unhold func() error) {
	if !s.held || be == nil {
		return func() error { return nil }
	}
	dir, err := ctl.Dir()
	if err != nil {
		return func() error { return err }
	}
	return holdBE(dir, be.cmd.Process.Pid, ctl.Mono)
}

// holdBE pauses the BE tenant pid's block in dir (ctl.Handle.Pause) until
// HoldFor on mono, now and each HoldEvery, until the stop it returns,
// which ends the pause (it may be called again: it does nothing more) and
// says the first error: no such block, or a pause that failed. The block
// is found and opened once. Each launch of a paused BE is held
// ctl.PauseMax at most: it still launches about twice a second.
func holdBE(dir string, pid int, mono func() time.Duration) (stop func() error) {
	e, err := tenantBlock(dir, pid, ctl.ClassBE)
	if err != nil {
		return func() error { return err }
	}
	h, err := ctl.OpenPath(e.Path)
	if err != nil {
		return func() error { return err }
	}
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	note(h.Pause(mono() + HoldFor))
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(HoldEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				note(h.Pause(mono() + HoldFor))
			}
		}
	}()
	var once sync.Once
	return func() error {
		once.Do(func() {
			close(done)
			<-ended
			note(h.Pause(0))
			h.Close()
		})
		return first
	}
}
