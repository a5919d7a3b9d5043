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
)

// LockFile is the lock's name in the runtime directory; it holds the pid
// of its last holder.
const LockFile = ".place.lock"

// Timeout is how long Lock waits for another holder by default.
var Timeout = 10 * time.Second

// Lock takes dir's placement lock, waiting up to timeout for a holder that
// still runs; unlock lets it go.
func Lock(dir string, timeout time.Duration) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("placement lock: %w", err)
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
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
