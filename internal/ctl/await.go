// Waiting for a tenant's first kernel launch (AwaitLaunch), for carve mps touch.

package ctl

import (
	"sync/atomic"
	"time"
)

// AwaitLaunch waits until the process of the block at path has launched a
// kernel (its shim counts every launch it sees: its context is made, and
// under MPS it is a client), looking every poll, sleeping through sleep:
// true. False once the process has ended first. carve mps touch waits so
// for a tenant before it connects to MPS after it (HARDWARE.md, section 11).
func AwaitLaunch(path string, poll time.Duration, sleep func(time.Duration)) (bool, error) {
	h, err := OpenPath(path)
	if err != nil {
		return false, err
	}
	defer h.Close()
	s := h.Snapshot() // its pid and start time
	for {
		var n uint64
		if err := guarded(path, func() { n = atomic.LoadUint64(&h.b.Launches) }); err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
		if !s.Alive() {
			return false, nil
		}
		sleep(poll)
	}
}
