// The placement lock: one flock per runtime directory, under which every
// placement, move, memory change, release and fence reads and writes it.

package place

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// LockFile is the lock's name in the runtime directory; it holds the pid
// of its last holder who could write it. In a directory several users
// share (ctl.Shared: the node directory) it must be root's (made by carve
// node init) or the directory owner's, mode 0644, and the others lock it
// through a read-only descriptor: flock needs none other (ctl.OpenLock).
const LockFile = ctl.LockName

// Timeout is how long Lock waits for another holder by default.
var Timeout = 10 * time.Second

// recordLegacy records the claims of an older carve's runtime directory
// (a test makes it fail).
var recordLegacy = ctl.RecordLegacy

// lock takes dir's placement lock for a change that reads dir (Lock, up
// to Timeout), and first records the claims of an older carve's runtime
// directory, once (ctl.RecordLegacy): every placement, move, memory
// change, release and fence reads the claims as recorded. It fails, the
// lock let go, where either does.
func lock(dir string) (unlock func(), err error) {
	unlock, err = Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	if _, err := recordLegacy(dir); err != nil {
		unlock()
		return nil, fmt.Errorf("recording the claims of an older carve in %s: %w", dir, err)
	}
	return unlock, nil
}

// Lock takes dir's placement lock, waiting up to timeout for a holder that
// still runs; unlock lets it go.
func Lock(dir string, timeout time.Duration) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, writable, err := ctl.OpenLock(dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("placement lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(path)
			f.Close()
			return nil, fmt.Errorf("the placement lock %s is held by pid %s for over %v: is a carve stuck?",
				path, strings.TrimSpace(string(holder)), timeout)
		}
		time.Sleep(wait)
	}
	if writable {
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
