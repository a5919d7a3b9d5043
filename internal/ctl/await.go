// Waiting for a tenant's first kernel launch (AwaitLaunch), for carve mps touch.

package ctl

import (
	"sync/atomic"
	"time"
)

// AwaitLaunch waits until the process of the block at path has launched a
// kernel (its shim counts every launch it sees: its context is made, and
// under MPS it is a client), looking every poll, sleeping through sleep,
// or until it has ended first. It returns the block as it read it then:
// Launches is 0 where the process ended with none; Alive says later
// whether it still runs. carve mps touch waits so for a tenant before it
// connects to MPS after it (HARDWARE.md, section 11).
func AwaitLaunch(path string, poll time.Duration, sleep func(time.Duration)) (Snapshot, error) {
	h, err := OpenPath(path)
	if err != nil {
		return Snapshot{}, err
	}
	defer h.Close()
	s := h.Snapshot() // its pid and start time
	for {
		if err := guarded(path, func() { s.Launches = atomic.LoadUint64(&h.b.Launches) }); err != nil {
			return Snapshot{}, err
		}
		if s.Launches > 0 || !s.Alive() {
			return s, nil
		}
		sleep(poll)
	}
}
