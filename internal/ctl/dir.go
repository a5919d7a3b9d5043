// The runtime directory of the control blocks: where it is (Dir), and the
// blocks it holds (List, Ended, Scan), which removes those of ended
// processes once their memory is credited back.

package ctl

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Dir is the runtime directory of the calling user's control blocks:
// $CARVE_RUNTIME_DIR; else the node directory (NodeDir), every user's,
// where it exists, and an error where it exists but root did not make it
// (nodedir.go says why); else /dev/shm/carve-UID (shared memory), else
// TMPDIR/carve-UID. A directory of the user's own is created 0700 and
// must be owned by the user.
func Dir() (string, error) {
	d := os.Getenv("CARVE_RUNTIME_DIR")
	if d == "" {
		if nd, ok, err := nodeDir(); ok || err != nil {
			return nd, err
		}
		base := "/dev/shm"
		if st, err := os.Stat(base); err != nil || !st.IsDir() {
			base = os.TempDir()
		}
		d = filepath.Join(base, fmt.Sprintf("carve-%d", os.Getuid()))
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("runtime directory: %w", err)
	}
	st, err := os.Lstat(d)
	if err != nil {
		return "", fmt.Errorf("runtime directory: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("runtime directory %s must be a directory owned by uid %d with mode 0700", d, os.Getuid())
	}
	return d, nil
}

// Entry is one listed block.
type Entry struct {
	Snapshot
	Path string
}

// KeepEnded is how long the block of a process that ended after a GPU fault
// is kept, so that carve ls can say what happened.
const KeepEnded = time.Hour

// List returns the blocks of live processes in dir, by pid. It removes the
// files of processes that have died (and leftovers of interrupted
// creation), except those that recorded a GPU fault, which Ended lists
// until they are KeepEnded old, and a tenant's first block while its
// children run (their memory account); what device memory a dead process
// held is first credited back to its tenant's account (CreditEnded).
// Blocks it cannot read are skipped (Read says which).
func List(dir string) ([]Entry, error) {
	live, _, err := Scan(dir)
	return live, err
}

// Ended returns the blocks of processes that ended after a GPU fault, by
// the fault's time.
func Ended(dir string) ([]Entry, error) {
	_, ended, err := Scan(dir)
	return ended, err
}

// Scan returns the live blocks and those of processes that ended after a
// GPU fault, and removes the rest of the dead ones. It skips the blocks it
// cannot read (Read says which).
func Scan(dir string) (live, ended []Entry, err error) {
	live, ended, _, err = scan(dir, false, false)
	return live, ended, err
}

// scan lists dir's blocks. A process runs while its shim holds the lock on
// its block (Held); byLock: only then, for blocks whose pids belong to
// another PID namespace; else also while its pid runs with its start time
// (carve run makes a block before the program, and so its shim, starts).
// skipped are the blocks it cannot read. peek: it removes nothing and
// credits nothing back (Peek).
func scan(dir string, byLock, peek bool) (live, ended []Entry, skipped []Bad, err error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var dead []Entry
	for _, de := range names {
		name := de.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".new") {
			pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "."), ".new"))
			if err == nil && !byLock && !peek && syscall.Kill(pid, 0) == syscall.ESRCH {
				os.Remove(filepath.Join(dir, name))
			}
			continue
		}
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		e := Entry{Path: filepath.Join(dir, name)}
		alive, err := readEntry(dir, &e, byLock, peek)
		if b, ok := badOf(e.Path, err); ok {
			skipped = append(skipped, b)
			continue
		}
		if err != nil {
			continue // gone meanwhile
		}
		if alive {
			live = append(live, e)
		} else {
			dead = append(dead, e)
		}
	}
	// the block of a tenant's first process is its children's memory
	// account: it stays while they run
	accounts := map[int]bool{}
	for _, e := range live {
		if e.Tenant != e.PID {
			accounts[e.Tenant] = true
		}
	}
	for _, e := range dead {
		switch {
		case e.Fault.Code != 0 && time.Since(e.Fault.At) < KeepEnded:
			ended = append(ended, e)
		case accounts[e.PID], peek:
		default:
			os.Remove(e.Path)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].PID < live[j].PID })
	sort.Slice(ended, func(i, j int) bool { return ended[i].Fault.At.Before(ended[j].Fault.At) })
	return live, ended, skipped, nil
}

// readEntry reads the block e.Path into e, and says whether its process
// runs; that of one that has ended is credited back first (credit),
// unless peek.
func readEntry(dir string, e *Entry, byLock, peek bool) (alive bool, err error) {
	h, err := openPath(e.Path)
	if err != nil {
		return false, err
	}
	defer h.Close()
	err = guarded(e.Path, func() {
		e.Snapshot = h.Snapshot()
		alive = h.Held() || !byLock && e.Snapshot.Alive()
		if !alive && !peek && credit(dir, h) > 0 {
			e.Snapshot = h.Snapshot()
		}
	})
	if err != nil {
		return false, err
	}
	return alive, checkMasks(e.Path, e.Snapshot)
}
