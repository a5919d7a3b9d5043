// The clock of the shim's heartbeats, as carve reads it.

package ctl

import (
	"time"

	"golang.org/x/sys/unix"
)

// monotonicNS is CLOCK_MONOTONIC in ns, the clock of the shim's heartbeats.
func monotonicNS() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Mono is CLOCK_MONOTONIC's time: the clock of a BE's pause (Handle.Pause)
// and of the shim's heartbeats.
func Mono() time.Duration {
	return time.Duration(monotonicNS())
}
