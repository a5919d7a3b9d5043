// What a test plays in the blocks the shim reads: it maps a block's file
// a second time, as the shim does, and reads and writes it through ctl's
// mirrors (ctl.Block, ctl.NodeBlock). A player writes a node block as an
// LS tenant's shim keeps its slot (shim/tide_node.c), on the shims' clock (now,
// in ns): BE tenants' shims then see exactly what the test wrote, and when.

package shimtest_test

import (
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
)

// mapFile maps size bytes of the file path, shared, until the test ends.
func mapFile(t testing.TB, path string, size int) unsafe.Pointer {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mapping %s: %v", path, err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return unsafe.Pointer(&mem[0])
}

// blockOf is the control block h maps, mapped for the test.
func blockOf(t testing.TB, h *ctl.Handle) *ctl.Block {
	return (*ctl.Block)(mapFile(t, h.Path, ctl.Size))
}

// player is a node block mapped for a test that plays an LS tenant's shim.
type player struct{ b *ctl.NodeBlock }

// playOn maps n's node block for the test to play in.
func playOn(t testing.TB, n *ctl.Node) player {
	return player{(*ctl.NodeBlock)(mapFile(t, n.Path, ctl.NodeSize))}
}

// ls takes slot i for an LS tenant of pid that reserves the TPCs reserved
// (enable bits); the slot's lock is not taken.
func (p player) ls(i, pid int, reserved [4]uint32) {
	s := &p.b.Slots[i]
	for w := range reserved {
		atomic.StoreUint32(&s.Reserved[w], reserved[w])
	}
	atomic.StoreUint32(&s.PID, uint32(pid))
	atomic.AddUint32(&p.b.Gen, 1)
}

// busy marks slot i's tenant busy (a request begins) or idle (it ends) at
// now, and renews its heartbeat.
func (p player) busy(i int, busy bool, now time.Duration) {
	s := &p.b.Slots[i]
	p.beat(i, now)
	if busy {
		atomic.StoreUint64(&s.BusySinceNS, uint64(now))
		atomic.AddUint64(&s.Requests, 1)
		atomic.StoreUint32(&s.Busy, 1)
		atomic.OrUint32(&p.b.Busy, 1<<i)
	} else {
		atomic.AddUint64(&s.BusyNS, uint64(now)-atomic.LoadUint64(&s.BusySinceNS))
		atomic.StoreUint32(&s.Busy, 0)
		atomic.AndUint32(&p.b.Busy, ^uint32(1<<i))
	}
}

// beat renews slot i's heartbeat, and the node's latest, at now.
func (p player) beat(i int, now time.Duration) {
	atomic.StoreUint64(&p.b.Slots[i].BeatNS, uint64(now))
	atomic.StoreUint64(&p.b.BeatNS, uint64(now))
}

// timing stamps slot i as an LS tenant's shim does when it records an
// event made for timing, at now.
func (p player) timing(i int, now time.Duration) {
	atomic.StoreUint64(&p.b.TimingNS[i], uint64(now))
}

// busyBits is the node block's busy field.
func (p player) busyBits() uint32 { return atomic.LoadUint32(&p.b.Busy) }

// lease is the node's lease.
func (p player) lease() time.Duration { return time.Duration(atomic.LoadUint64(&p.b.LeaseNS)) }

// stamp is slot i's latest timing stamp (0: none).
func (p player) stamp(i int) time.Duration { return time.Duration(atomic.LoadUint64(&p.b.TimingNS[i])) }
