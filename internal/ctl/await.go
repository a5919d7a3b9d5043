// Following a tenant's block for carve mps touch (Watch): its first kernel
// launch (AwaitLaunch) and whether it still runs (Running).

package ctl

import (
	"sync/atomic"
	"time"
)

// A Watch holds a tenant process's block open to follow it.
type Watch struct {
	h *Handle
	s Snapshot // as opened: its pid and start time
}

// WatchBlock opens the block at path to follow its process.
func WatchBlock(path string) (*Watch, error) {
	h, err := OpenPath(path)
	if err != nil {
		return nil, err
	}
	return &Watch{h: h, s: h.Snapshot()}, nil
}

// Close lets the block go.
func (w *Watch) Close() error { return w.h.Close() }

// Running says whether the process still runs: its shim holds the lock on
// the block (a claim's process, whose pid names nothing outside its
// container), or its pid runs as the one that started then (a tenant of
// carve run before its shim took the lock).
func (w *Watch) Running() bool { return w.h.Held() || w.s.Alive() }

// AwaitLaunch waits until the process has launched a kernel (its shim
// counts every launch it sees: its context is made, and under MPS it is a
// client), looking every poll, sleeping through sleep, or until it has
// ended first; it returns its launches then (0: it ended with none). carve
// mps touch waits so for a tenant before it connects to MPS after it
// (README, "MPS, and what it brings with it").
func (w *Watch) AwaitLaunch(poll time.Duration, sleep func(time.Duration)) (uint64, error) {
	for {
		var n uint64
		if err := guarded(w.h.Path, func() { n = atomic.LoadUint64(&w.h.b.Launches) }); err != nil {
			return 0, err
		}
		if n > 0 || !w.Running() {
			return n, nil
		}
		sleep(poll)
	}
}
