// Tests of the SLO controller on the plant's serial server (plant_test.go),
// an LS tenant that serves one request at a time, each its own busy
// period: what it holds sees the queue the busy periods miss.

package slo_test

import (
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// serialMs is the serial server's mean service alone (about what
// efficientnet_b0 takes on an H100), and serialRate its arrivals a second
// that keep it about 70% busy alone.
const (
	serialMs   = time.Millisecond
	serialRate = 700
)

// TestSerialQueueSeen: at 70% busy alone, a BE that asked all would keep
// every busy period short while requests queue without bound on the
// server; the controller keeps the requests' p99 under the SLO.
func TestSerialQueueSeen(t *testing.T) {
	p := newPlant(t)
	v := p.addSerial(ctl.SLO{Max: 6 * time.Millisecond}, serialMs, 0.5, serialRate, 1)
	p.addBE(1, 300*time.Microsecond)
	p.run(100)
	for range 50 {
		p.run(1)
		share, _ := p.dials()
		if got := v.p99(window); got > 6*time.Millisecond {
			t.Fatalf("step %d: requests' p99 %v over the SLO of 6ms, busy periods' p99 %v, BE share %g",
				p.step, got, v.busyP99(window*serialRate/10), share)
		}
	}
}
