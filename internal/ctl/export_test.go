package ctl

import (
	"sync/atomic"
	"time"
)

// BusyBits is the node block's busy field, for tests.
func (n *Node) BusyBits() uint32 { return atomic.LoadUint32(&n.b.Busy) }

// The Play functions let a test play an LS tenant in the node block, as an
// LS tenant's shim keeps its slot (shim/tide.c), on the shims' clock (now,
// in ns): BE tenants' shims then see exactly what the test wrote, and when.

// PlayLS takes slot i for an LS tenant of pid that reserves the TPCs
// reserved (enable bits); the slot's lock is not taken.
func (n *Node) PlayLS(i, pid int, reserved [4]uint32) {
	s := &n.b.Slots[i]
	for w := range reserved {
		atomic.StoreUint32(&s.Reserved[w], reserved[w])
	}
	atomic.StoreUint32(&s.PID, uint32(pid))
	atomic.AddUint32(&n.b.Gen, 1)
}

// PlayBusy marks slot i's tenant busy (a request begins) or idle (it
// ends) at now, and renews its heartbeat.
func (n *Node) PlayBusy(i int, busy bool, now time.Duration) {
	s := &n.b.Slots[i]
	n.PlayBeat(i, now)
	if busy {
		atomic.StoreUint64(&s.BusySinceNS, uint64(now))
		atomic.AddUint64(&s.Requests, 1)
		atomic.StoreUint32(&s.Busy, 1)
		atomic.OrUint32(&n.b.Busy, 1<<i)
	} else {
		atomic.AddUint64(&s.BusyNS, uint64(now)-atomic.LoadUint64(&s.BusySinceNS))
		atomic.StoreUint32(&s.Busy, 0)
		atomic.AndUint32(&n.b.Busy, ^uint32(1<<i))
	}
}

// PlayBeat renews slot i's heartbeat, and the node's latest, at now.
func (n *Node) PlayBeat(i int, now time.Duration) {
	atomic.StoreUint64(&n.b.Slots[i].BeatNS, uint64(now))
	atomic.StoreUint64(&n.b.BeatNS, uint64(now))
}

// Lease is the node's lease.
func (n *Node) Lease() time.Duration { return time.Duration(atomic.LoadUint64(&n.b.LeaseNS)) }

// BlockOf is the block h maps, for tests that play a shim's part.
func BlockOf(h *Handle) *Block { return h.b }

// PlayTiming stamps slot i as an LS tenant's shim does when it records an
// event made for timing, at now.
func (n *Node) PlayTiming(i int, now time.Duration) {
	atomic.StoreUint64(&n.b.TimingNS[i], uint64(now))
}

// Timing is slot i's latest timing stamp (0: none).
func (n *Node) Timing(i int) time.Duration { return time.Duration(atomic.LoadUint64(&n.b.TimingNS[i])) }
