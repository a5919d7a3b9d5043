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
	"sync"
	"syscall"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"golang.org/x/sys/unix"
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
	unlock, _, err = lockPassing(dir, false)
	return unlock, err
}

// lockPassing is lock; with pass, it goes on without the lock where a
// process of a user but root has held it for PassOver (lockOrPass), and
// says who (held).
func lockPassing(dir string, pass bool) (unlock func(), held string, err error) {
	unlock, held, err = lockOrPass(dir, Timeout, pass)
	if err != nil {
		return nil, "", err
	}
	if _, err := recordLegacy(dir); err != nil {
		unlock()
		return nil, "", fmt.Errorf("recording the claims of an older carve in %s: %w", dir, err)
	}
	return unlock, held, nil
}

// Lock takes dir's placement lock, waiting up to timeout for a holder that
// still runs; unlock lets it go.
func Lock(dir string, timeout time.Duration) (unlock func(), err error) {
	unlock, _, err = lockOrPass(dir, timeout, false)
	return unlock, err
}

// PassOver is how long a user's placement in the node directory, and
// root's fence, wait for the placement lock while a process of a user
// but root holds it, before they go on without it (lockOrPass): any user
// may lock root's lock file, and hold it for good.
var PassOver = 2 * time.Second

// passedOver are the holders lockOrPass went on without, by the lock's
// file and the holder's pid: this process does not wait for one again.
var passedOver sync.Map

// lockOrPass takes dir's placement lock as Lock does; with pass, where a
// process of a user but root has held it for PassOver (once in this
// process), it goes on without it, and says who held it (held). A
// placement without the lock may race another's for a free TPC: root's
// first record of each is judged in the order their blocks were made
// (ctl.RecordTenants), and carve run fails where it lost (Lost).
func lockOrPass(dir string, timeout time.Duration, pass bool) (unlock func(), held string, err error) {
	path := filepath.Join(dir, LockFile)
	f, writable, err := ctl.OpenLock(dir)
	if err != nil {
		return nil, "", err
	}
	start := time.Now()
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, "", fmt.Errorf("placement lock %s: %w", path, err)
		}
		if h, ok := passable(f, pass); ok {
			key := fmt.Sprint(path, " ", h.pid)
			if _, again := passedOver.Load(key); h.pid != 0 && again || time.Since(start) > PassOver {
				if h.pid != 0 { // a holder not known is waited for each time
					passedOver.Store(key, true)
				}
				return func() { f.Close() }, h.String(), nil
			}
		}
		if time.Since(start) > timeout {
			holder := "an unknown process"
			if h, ok := lockHolder(f); ok {
				holder = h.String()
			}
			f.Close()
			return nil, "", fmt.Errorf("the placement lock %s is held by %s for over %v: is a carve stuck?", path, holder, timeout)
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
	}, "", nil
}

// passable is the holder of f's lock where pass and it is not known to
// be root's, whose hold a placement may pass over: a process of a user
// but root, or one the kernel's table does not name as a live process
// here (a holder that exited and left the lock to a child, or one of
// another pid namespace: pid 0).
func passable(f *os.File, pass bool) (holder, bool) {
	if !pass {
		return holder{}, false
	}
	h, ok := lockHolder(f)
	return h, !ok || h.uid != 0
}

// holder is a process that holds a lock: its pid and user (pid 0: not
// known).
type holder struct{ pid, uid int }

func (h holder) String() string {
	if h.pid == 0 {
		return "a process not known here"
	}
	return fmt.Sprintf("pid %d of %s", h.pid, ctl.UserName(uint32(h.uid)))
}

// lockHolder is the process that holds an flock of f's file, from the
// kernel's table of locks, and its user (the owner of its /proc entry);
// false where none is found (one in another pid namespace has no pid
// here).
func lockHolder(f *os.File) (holder, bool) {
	st, err := f.Stat()
	if err != nil {
		return holder{}, false
	}
	sys := st.Sys().(*syscall.Stat_t)
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(sys.Dev), unix.Minor(sys.Dev), sys.Ino)
	table, err := os.ReadFile("/proc/locks")
	if err != nil {
		return holder{}, false
	}
	for _, line := range strings.Split(string(table), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 6973 00:1b:3 0 EOF"; a waiter's has "->"
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != file {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil || pid <= 0 {
			return holder{}, false
		}
		pst, err := os.Stat("/proc/" + f[4])
		if err != nil {
			return holder{}, false
		}
		return holder{pid: pid, uid: int(pst.Sys().(*syscall.Stat_t).Uid)}, true
	}
	return holder{}, false
}

// LockHolder is the process of a user but root that holds dir's
// placement lock now, if one does: its pid and user (carve daemon's
// metrics). One that holds it for long makes others' placements wait
// PassOver, and its own user's moves and root's placements fail.
func LockHolder(dir string) (pid int, user string, ok bool) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	h, ok := lockHolder(f)
	return h.pid, ctl.UserName(uint32(h.uid)), ok && h.uid != 0
}
