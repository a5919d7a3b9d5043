// The node block, one per GPU, where its LS and BE tenants meet: the
// values shared with shim/carve_node.h, NodeBlock, its mirror, and
// opening, listing and reading node blocks.

package ctl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/topo"
)

// Values shared with shim/carve_node.h.
const (
	NodeMagic   = 0x45444f4e
	NodeVersion = 4
	NodeSize    = 4096
	NodeSlots   = 32
	NodeLease   = 100 * time.Millisecond
	NodeQuiet   = time.Second // no LS tenant busy this long: BE queues are not bounded
	// NarrowMin is the fewest TPCs a BE tenant's launches are narrowed onto
	// while LS work is in flight, and so the smallest floor: kernels sized
	// for the whole GPU never finished on 4 or 6 TPCs of an H100 and ran on
	// a GPC of 8 (results/h100-580.159.04-2026-11-23/tide/small/).
	NarrowMin = 8
	// NodeTiming is how long after an LS tenant records an event made for
	// timing BE tenants are held as while it is busy, with no share, busy
	// or idle (CARVE_NODE_TIMING_NS).
	NodeTiming = 50 * time.Millisecond
)

// NodeSlot mirrors struct carve_node_slot: one LS tenant's activity.
type NodeSlot struct {
	PID         uint32    `c:"pid"`
	Busy        uint32    `c:"busy"`
	StartTicks  uint64    `c:"start_ticks"`
	BeatNS      uint64    `c:"beat_ns"`
	BusyNS      uint64    `c:"busy_ns"`
	BusySinceNS uint64    `c:"busy_since_ns"`
	Reserved    [4]uint32 `c:"reserved"`
	Requests    uint64    `c:"requests"`
}

// NodeBlock mirrors struct carve_node, the block the shims of one GPU's LS
// and BE tenants share; TestNodeLayoutMatchesHeader checks it.
type NodeBlock struct {
	Magic      uint32              `c:"magic"`
	Version    uint16              `c:"version"`
	Size       uint16              `c:"size"`
	Live       [4]uint32           `c:"live"`
	LeaseNS    uint64              `c:"lease_ns"`
	CreatedNS  uint64              `c:"created_ns"`
	Fixed      [4]uint32           `c:"fixed"`
	Gen        uint32              `c:"gen"`
	Busy       uint32              `c:"busy"`
	BeatNS     uint64              `c:"beat_ns"`
	Pad        [56]byte            `c:"pad"`
	Slots      [NodeSlots]NodeSlot `c:"slots"`
	TimingNS   [NodeSlots]uint64   `c:"timing_ns"`
	BELaunchNS uint64              `c:"be_launch_ns"`
	Pad2       [56]byte            `c:"pad2"`
	Rest       [1600]byte          `c:"rest"`
}

var _ [NodeSize - unsafe.Sizeof(NodeBlock{})]byte
var _ [unsafe.Sizeof(NodeBlock{}) - NodeSize]byte

var nodeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// NodeName is the node block's file name for a GPU (by its UUID).
func NodeName(uuid string) string { return "node-" + nodeName.ReplaceAllString(uuid, "_") }

// NodeSharedPerm is the mode of a node block that tenants of several
// users take slots in: one in a Shared directory, and one linked into a
// claim's directory, whose containers run under any uid (ShareNode).
// Elsewhere a node block is its user's alone, mode 0600.
const NodeSharedPerm os.FileMode = 0o666

// ShareNode gives the node block at path the mode NodeSharedPerm, for a
// claim's directory it is linked into.
func ShareNode(path string) error {
	if err := os.Chmod(path, NodeSharedPerm); err != nil {
		return fmt.Errorf("node block: %w", err)
	}
	return nil
}

// Node is a mapped node block.
type Node struct {
	Path string
	mem  []byte
	b    *NodeBlock
}

// OpenNode maps the node block name in dir, creating it for a GPU with the
// given live TPCs if there is none. Call it under the placement lock.
func OpenNode(dir, name string, live topo.Enable) (*Node, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if os.IsNotExist(err) {
		return createNode(path, live)
	}
	if err != nil {
		return nil, fmt.Errorf("node block: %w", err)
	}
	defer f.Close()
	n, err := mapNode(path, f)
	if err != nil {
		return nil, err
	}
	if magic, version, size := n.b.Magic, n.b.Version, n.b.Size; magic != NodeMagic || version != NodeVersion || int(size) != NodeSize {
		n.Close() // n.b is gone with it
		return nil, fmt.Errorf("node block %s: magic %#x version %d, this carve's is %d (left by another release? "+
			"with no LS or BE tenant running, remove it)", path, magic, version, NodeVersion)
	}
	n.resetLease()
	return n, nil
}

func mapNode(path string, f *os.File) (*Node, error) {
	st, err := f.Stat()
	if err != nil || st.Size() != NodeSize {
		return nil, fmt.Errorf("node block %s has the wrong size", path)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, NodeSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return &Node{Path: path, mem: mem, b: (*NodeBlock)(unsafe.Pointer(&mem[0]))}, nil
}

func createNode(path string, live topo.Enable) (*Node, error) {
	tmp := path + ".new"
	perm := os.FileMode(0o600)
	if Shared(filepath.Dir(path)) {
		perm = NodeSharedPerm // LS and BE tenants of every user take slots
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, fmt.Errorf("creating node block: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(perm); err != nil { // past the umask
		os.Remove(tmp)
		return nil, fmt.Errorf("creating node block: %w", err)
	}
	if err := f.Truncate(NodeSize); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	n, err := mapNode(path, f)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	b := n.b
	b.Magic, b.Version, b.Size = NodeMagic, NodeVersion, NodeSize
	b.Live, b.LeaseNS, b.CreatedNS = live, uint64(NodeLease), uint64(time.Now().UnixNano())
	if err := os.Rename(tmp, path); err != nil {
		n.Close()
		os.Remove(tmp)
		return nil, err
	}
	return n, nil
}

// Nodes maps every node block in dir; close each.
func Nodes(dir string) ([]*Node, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "node-*"))
	if err != nil {
		return nil, err
	}
	var out []*Node
	for _, p := range paths {
		if filepath.Ext(p) == ".new" {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		n, err := mapNode(p, f)
		f.Close()
		if err != nil {
			continue
		}
		if n.b.Magic != NodeMagic || n.b.Version != NodeVersion {
			n.Close()
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// resetLease writes the lease carve sets into the block: every tenant of
// the GPU may write it, and the shims honour none longer.
func (n *Node) resetLease() { atomic.StoreUint64(&n.b.LeaseNS, uint64(NodeLease)) }

// Name is the block's file name.
func (n *Node) Name() string { return filepath.Base(n.Path) }

// Close unmaps the block.
func (n *Node) Close() error { return syscall.Munmap(n.mem) }

// Live is the GPU's live TPC bits.
func (n *Node) Live() topo.Enable { return n.b.Live }

// SetFixed sets the TPCs that LS tenants' launches keep off:
// those of the GPU's partitions that are neither LS nor BE, and the BE
// tenants' floors. Call it under the placement lock.
func (n *Node) SetFixed(m topo.Enable) {
	for i := range m {
		atomic.StoreUint32(&n.b.Fixed[i], m[i])
	}
	atomic.AddUint32(&n.b.Gen, 1)
}

// Fixed is what SetFixed last set.
func (n *Node) Fixed() (m topo.Enable) {
	for i := range m {
		m[i] = atomic.LoadUint32(&n.b.Fixed[i])
	}
	return m
}

// LSSlot is a snapshot of one LS tenant's slot.
type LSSlot struct {
	Slot     int
	PID      int
	Busy     bool
	Beat     time.Duration // since the last heartbeat (of CLOCK_MONOTONIC)
	BusyTime time.Duration
	Requests uint64
	Reserved topo.Enable
}

// LS returns the slots in use.
func (n *Node) LS() []LSSlot {
	now := monotonicNS()
	var out []LSSlot
	for i := range n.b.Slots {
		s := &n.b.Slots[i]
		pid := atomic.LoadUint32(&s.PID)
		if pid == 0 {
			continue
		}
		l := LSSlot{Slot: i, PID: int(pid), Busy: atomic.LoadUint32(&s.Busy) != 0,
			BusyTime: time.Duration(atomic.LoadUint64(&s.BusyNS)), Requests: atomic.LoadUint64(&s.Requests)}
		if beat := atomic.LoadUint64(&s.BeatNS); beat != 0 {
			l.Beat = time.Duration(now - int64(beat))
		}
		for j := range l.Reserved {
			l.Reserved[j] = atomic.LoadUint32(&s.Reserved[j])
		}
		out = append(out, l)
	}
	return out
}

// NodeSlotLock is the byte of the node block's file whose POSIX record
// lock is slot i's (CARVE_NODE_SLOT_LOCK): its tenant holds it for life.
func NodeSlotLock(i int) int64 {
	return int64(unsafe.Offsetof(NodeBlock{}.Slots)) + int64(i)*int64(unsafe.Sizeof(NodeSlot{}))
}

// Reclaim frees the slots of tenants that have ended: those whose lock no
// process holds. It takes each such slot's lock while it clears it, so that
// a tenant taking the slot at the same moment is never undone, and it needs
// no pid, so it is right for tenants in containers too. It writes the lease
// carve sets into the block again (NodeLease).
func (n *Node) Reclaim() int {
	n.resetLease()
	f, err := os.OpenFile(n.Path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0
	}
	defer f.Close() // lets go of every lock taken here
	freed := 0
	for i := range n.b.Slots {
		s := &n.b.Slots[i]
		if atomic.LoadUint32(&s.PID) == 0 {
			continue
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: NodeSlotLock(i), Len: 1}
		if syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk) != nil {
			continue // its tenant runs
		}
		atomic.StoreUint32(&s.Busy, 0)
		atomic.AndUint32(&n.b.Busy, ^(uint32(1) << i))
		atomic.StoreUint32(&s.PID, 0)
		atomic.AddUint32(&n.b.Gen, 1)
		freed++
		lk.Type = syscall.F_UNLCK
		syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	}
	return freed
}
