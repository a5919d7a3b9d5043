// Whether a block's process still runs: by its pid and the start time
// recorded in the block (Alive), or by the lock its shim holds on the
// block's file (Held).

package ctl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartTicks reads field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot. With the pid it names one process for good.
func StartTicks(pid int) (uint64, error) {
	_, ticks, err := procStat(pid)
	return ticks, err
}

// procStat reads the state (field 3) and start time (field 22) of
// /proc/PID/stat.
func procStat(pid int) (state byte, ticks uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ticks, err = strconv.ParseUint(f[19], 10, 64)
	return f[0][0], ticks, err
}

// Alive reports whether the process the block was made for still runs (the
// pid exists and, where recorded, started at the same time). A process
// that has exited and waits to be reaped (a zombie) has ended: it holds no
// GPU work.
func (s Snapshot) Alive() bool {
	if err := syscall.Kill(s.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	state, t, err := procStat(s.PID)
	if err != nil {
		return s.StartTicks == 0 // a pid that runs, out of sight (another /proc)
	}
	if (state == 'Z' || state == 'X') && !threads(s.PID) {
		// an exec from another thread passes through this for a moment:
		// a zombie is one still
		time.Sleep(time.Millisecond)
		if state, t, err = procStat(s.PID); err != nil || (state == 'Z' || state == 'X') && !threads(s.PID) {
			return false
		}
	}
	return s.StartTicks == 0 || t == s.StartTicks
}

// threads says whether a process whose first thread has ended (the stat
// of its pid says zombie) has threads that run: one that exits its main
// thread does, and so does one whose other thread is exec'ing (carve run
// does that), for a moment.
func threads(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if i := bytes.LastIndexByte(b, ')'); err == nil && i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X' {
			return true
		}
	}
	return false
}

// Held reports whether a process holds the lock on the block's file that a
// shim holds for its life (see shim/carve_ctl.h).
func (h *Handle) Held() bool { return held(h.f) }

// held reports whether another process holds a lock on the first byte of
// f, the shim's (Held).
func held(f *os.File) bool {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false
	}
	return lk.Type != syscall.F_UNLCK
}
