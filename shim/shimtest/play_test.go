// What a test plays in the blocks the shim reads: it maps a block's file
// a second time, as the shim does, and reads and writes it through ctl's
// mirrors (ctl.Block, ctl.NodeBlock, ctl.LSFile). A player seats LS
// tenants in a node block as carve does and writes their LS files as an LS
// tenant's shim keeps its entry (shim/tide_node.c), on the shims' clock
// (now, in ns): BE tenants' shims then see exactly what the test wrote,
// and when.

package shimtest_test

import (
	"os"
	"path/filepath"
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

// player is a node block mapped for a test that plays carve (the table)
// and LS tenants' shims (their LS files, entry 0 of each, each mapped
// once: files).
type player struct {
	t     testing.TB
	n     *ctl.Node
	b     *ctl.NodeBlock
	files map[string]*ctl.LSFile
}

// playOn maps n's node block for the test to play in.
func playOn(t testing.TB, n *ctl.Node) player {
	return player{t, n, (*ctl.NodeBlock)(mapFile(t, n.Path, ctl.NodeSize)), map[string]*ctl.LSFile{}}
}

// ls seats, in slot i (the first free one), an LS tenant of pid that
// reserves the TPCs reserved (enable bits), with its LS file, as carve
// does; no entry's lock is taken.
func (p player) ls(i, pid int, reserved [4]uint32) {
	p.t.Helper()
	got, err := p.n.Give(ctl.Seat{PID: pid, Node: p.n.Name(), Reserved: reserved, Dir: filepath.Dir(p.n.Path)})
	if err != nil || got != i {
		p.t.Fatalf("seating pid %d: slot %d, %v; want slot %d", pid, got, err, i)
	}
}

// file is slot i's LS file, mapped (once a file: a heartbeat each step
// would map it again each step).
func (p player) file(i int) *ctl.LSFile {
	path := p.n.LSPath(i)
	if f, ok := p.files[path]; ok {
		return f
	}
	f := (*ctl.LSFile)(mapFile(p.t, path, ctl.LSSize))
	p.files[path] = f
	return f
}

// busy marks slot i's tenant busy (a request begins) or idle (it ends) at
// now in its entry 0, and renews its heartbeat.
func (p player) busy(i int, busy bool, now time.Duration) {
	f := p.file(i)
	s := &f.Procs[0]
	atomic.StoreUint32(&s.PID, 1)
	p.beat(i, now)
	if busy {
		atomic.StoreUint64(&s.BusySinceNS, uint64(now))
		atomic.AddUint64(&s.Requests, 1)
		atomic.StoreUint32(&s.Busy, 1)
		atomic.OrUint32(&f.Busy, 1)
	} else {
		atomic.AddUint64(&s.BusyNS, uint64(now)-atomic.LoadUint64(&s.BusySinceNS))
		atomic.StoreUint32(&s.Busy, 0)
		atomic.AndUint32(&f.Busy, ^uint32(1))
	}
}

// beat renews slot i's heartbeat, and its LS file's latest, at now.
func (p player) beat(i int, now time.Duration) {
	f := p.file(i)
	atomic.StoreUint64(&f.Procs[0].BeatNS, uint64(now))
	atomic.StoreUint64(&f.BeatNS, uint64(now))
}

// timing stamps slot i as an LS tenant's shim does when it records an
// event made for timing, at now.
func (p player) timing(i int, now time.Duration) {
	f := p.file(i)
	atomic.StoreUint64(&f.Procs[0].TimingNS, uint64(now))
	atomic.StoreUint64(&f.TimingNS, uint64(now))
}

// busyBits has bit i set for each seat whose LS file has a busy entry.
func (p player) busyBits() uint32 {
	var bits uint32
	for i := range ctl.NodeSlots {
		if atomic.LoadUint32(&p.b.Used)&(1<<i) != 0 && atomic.LoadUint32(&p.file(i).Busy) != 0 {
			bits |= 1 << i
		}
	}
	return bits
}

// lease is the node's lease.
func (p player) lease() time.Duration { return time.Duration(atomic.LoadUint64(&p.b.LeaseNS)) }

// stamp is slot i's latest timing stamp (0: none).
func (p player) stamp(i int) time.Duration {
	return time.Duration(atomic.LoadUint64(&p.file(i).TimingNS))
}
