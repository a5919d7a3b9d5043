// What a BE tenant's shim believes of the node block (shim/tide_node.c):
// every tenant of the GPU may write it, so a busy slot that no LS tenant
// renews holds BE tenants back for carve's lease at most, whatever lease
// or heartbeat the block says.

package shimtest_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// TestBusySlotHoldsBEOneLease: a slot marked busy by no live LS tenant,
// with the block's lease set to an hour (or its heartbeat an hour ahead),
// holds a BE's burst of launches for ctl.NodeLease from its heartbeat and
// then no more; at an epoch a launch, it would hold each launch an epoch.
func TestBusySlotHoldsBEOneLease(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lease, beat time.Duration // the block's lease; the heartbeat, from now
	}{
		{"lease of an hour", time.Hour, 0},
		{"heartbeat an hour ahead", ctl.NodeLease, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := tideNode(t, dir)
			c := shimtest.NewClock(t, dir, 100*us)
			be, _ := beOn(t, c, dir, ctl.Tide{})
			node := playOn(t, n)
			node.ls(0, 1, enableOnly(0, 1))
			node.busy(0, true, c.Now()+tc.beat)
			atomic.StoreUint64(&node.b.LeaseNS, uint64(tc.lease))
			const launches = 30 // at the default epoch, 300 ms held
			if d := be.burst(t, launches); d > ctl.NodeLease {
				t.Errorf("%d BE launches beside a busy slot nobody renews took %v, want at most the lease, %v",
					launches, d, ctl.NodeLease)
			}
		})
	}
}
