// The lock that lets one controller steer a runtime directory: a
// non-blocking flock on LockFile there, held while it runs.

package slo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the file in a runtime directory whose flock the controller
// that steers it holds: made by the first that needs it, mode 0644 (in
// the node directory, every user's, it may be another user's, and is
// then locked through a read-only descriptor).
const LockFile = ".slo.lock"

// ErrOther says another controller holds the directory's lock: this one
// does not steer.
var ErrOther = errors.New("another SLO controller steers this runtime directory")

// lockDir takes the lock of dir without waiting: ErrOther (wrapped) where
// another controller holds it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err == nil {
			err = f.Chmod(0o644) // past the umask
		}
		if errors.Is(err, os.ErrExist) { // made meanwhile
			f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("SLO controller's lock: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("SLO controller's lock %s: not a regular file", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w (it holds %s); this one waits", dir, ErrOther, path)
		}
		return nil, fmt.Errorf("SLO controller's lock %s: %w", path, err)
	}
	return f, nil
}

// TryStep steps (Step) where c holds its directory's lock, taking it if
// it is free; where another controller holds it, it writes nothing and
// returns ErrOther (wrapped). Close lets the lock go.
func (c *Controller) TryStep() error {
	c.lockMu.Lock()
	if c.lock == nil {
		f, err := lockDir(c.dir)
		if err != nil {
			c.lockMu.Unlock()
			return err
		}
		c.lock = f
	}
	c.lockMu.Unlock()
	return c.Step()
}

// Close lets go of the directory's lock, if c holds it; another
// controller then takes it at its next TryStep.
func (c *Controller) Close() error {
	c.lockMu.Lock()
	defer c.lockMu.Unlock()
	if c.lock == nil {
		return nil
	}
	err := c.lock.Close()
	c.lock = nil
	return err
}
