// An LS tenant's poller (shim/tide_ls.c) beside stream captures: it never
// queries a stream that a capture has begun on, however the begin and its
// looks interleave.

package shimtest_test

import (
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/shimtest"
)

// TestCaptureBeginNeverQueried: a stream with work not yet known done is
// captured (in global mode, as PyTorch's graphs are) while the LS
// tenant's poller looks at every step; the fake's begin is held 1 ms on
// the clock once the stream is capturing, where a query of the stream
// would spoil the capture (as the driver's does: its end fails). The
// capture survives: the shim counts it before the driver's begin, under
// the lock the poller holds from its look at the count to its queries.
func TestCaptureBeginNeverQueried(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 10*us)
	p, _ := lsOn(t, c, dir)
	p.say(t, "dur 20000") // the stream's kernel runs 20 ms: the tenant stays busy, the poller looking
	got, d := p.ask(t, "capwin 1000")
	if got != "rc 0" {
		t.Fatalf("capture of a stream with work beside the poller: %q, want rc 0 (901: the poller spoiled it)", got)
	}
	if d < time.Millisecond {
		t.Errorf("the capture's begin took %v, want the 1 ms the fake held it", d)
	}
	if s, ok := busyOf(n, p.pid); !ok || !s.Busy {
		t.Errorf("after the capture, while the kernel runs: slot %+v (found %v), want busy", s, ok)
	}
	// once the capture is over, the poller finds the work done
	c.RunFor(20 * ms)
	c.Settle()
	if s, _ := busyOf(n, p.pid); s.Busy {
		t.Errorf("after the kernel: %+v, want idle", s)
	}
}
