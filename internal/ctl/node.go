// The node block, one per GPU, where its LS and BE tenants meet: the
// values shared with shim/carve_node.h, NodeBlock, its mirror, and those
// of the LS and BE files, and opening, listing and reading node blocks
// (seat.go gives the LS tenants their seats).

package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/topo"
	"golang.org/x/sys/unix"
)

// Values shared with shim/carve_node.h.
const (
	NodeMagic   = 0x45444f4e
	NodeVersion = 5
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

	LSMagic = 0x5a42534c
	LSSize  = 4096
	LSProcs = 32
	BEMagic = 0x46454542
	BESize  = 4096

	SeatFree   = 0 // a slot's kind: free
	SeatTenant = 1 // a tenant of carve run's
	SeatClaim  = 2 // a Kubernetes claim's

	// the GPU's directory beside its node block (the block's name with
	// NodeDirSuffix), the files in it, and the links in a tenant's
	// directory (the block's name with these)
	NodeDirSuffix = ".d"
	NodeBEFile    = "be"
	NodeLSLink    = ".ls-"
	NodeBELink    = ".be"
)

// NodeSlot mirrors struct carve_node_slot: one LS tenant's seat, carve's.
type NodeSlot struct {
	PID        uint32    `c:"pid"`
	Kind       uint32    `c:"kind"`
	StartTicks uint64    `c:"start_ticks"`
	Serial     uint32    `c:"serial"`
	Pad        uint32    `c:"pad"`
	Reserved   [4]uint32 `c:"reserved"`
	Claim      [24]byte  `c:"claim"`
}

// NodeBlock mirrors struct carve_node, the block carve alone writes and
// the shims of one GPU's LS and BE tenants read; TestNodeLayoutMatchesHeader
// checks it.
type NodeBlock struct {
	Magic     uint32              `c:"magic"`
	Version   uint16              `c:"version"`
	Size      uint16              `c:"size"`
	Live      [4]uint32           `c:"live"`
	LeaseNS   uint64              `c:"lease_ns"`
	CreatedNS uint64              `c:"created_ns"`
	Fixed     [4]uint32           `c:"fixed"`
	Gen       uint32              `c:"gen"`
	Used      uint32              `c:"used"`
	Pad       [64]byte            `c:"pad"`
	Slots     [NodeSlots]NodeSlot `c:"slots"`
	Rest      [1920]byte          `c:"rest"`
}

// LSProc mirrors struct carve_ls_proc: one process of an LS tenant.
type LSProc struct {
	PID         uint32   `c:"pid"`
	Busy        uint32   `c:"busy"`
	BeatNS      uint64   `c:"beat_ns"`
	BusyNS      uint64   `c:"busy_ns"`
	BusySinceNS uint64   `c:"busy_since_ns"`
	Requests    uint64   `c:"requests"`
	TimingNS    uint64   `c:"timing_ns"`
	Pad         [16]byte `c:"pad"`
}

// LSFile mirrors struct carve_ls, an LS tenant's file, its own to write.
type LSFile struct {
	Magic    uint32          `c:"magic"`
	Version  uint16          `c:"version"`
	Size     uint16          `c:"size"`
	Slot     uint32          `c:"slot"`
	Busy     uint32          `c:"busy"`
	BeatNS   uint64          `c:"beat_ns"`
	TimingNS uint64          `c:"timing_ns"`
	Pad      [32]byte        `c:"pad"`
	Procs    [LSProcs]LSProc `c:"procs"`
	Rest     [1984]byte      `c:"rest"`
}

// BEFile mirrors struct carve_be, a BE file of the GPU's (befile.go).
type BEFile struct {
	Magic      uint32     `c:"magic"`
	Version    uint16     `c:"version"`
	Size       uint16     `c:"size"`
	Pad        [56]byte   `c:"pad"`
	BELaunchNS uint64     `c:"be_launch_ns"`
	Rest       [4024]byte `c:"rest"`
}

var _ [NodeSize - unsafe.Sizeof(NodeBlock{})]byte
var _ [unsafe.Sizeof(NodeBlock{}) - NodeSize]byte
var _ [LSSize - unsafe.Sizeof(LSFile{})]byte
var _ [unsafe.Sizeof(LSFile{}) - LSSize]byte
var _ [BESize - unsafe.Sizeof(BEFile{})]byte
var _ [unsafe.Sizeof(BEFile{}) - BESize]byte

// LSFileName is seat i's LS file in the GPU's directory, for its serial
// (CARVE_NODE_LS_FILE).
func LSFileName(i int, serial uint32) string { return fmt.Sprintf("ls-%d-%d", i, serial) }

// LSLinkName is the link to an LS claim's LS file in its directory: the
// node block's name, NodeLSLink and 0 (a tenant of carve run has none:
// its shim finds its seat in the node block by its pid).
func LSLinkName(node string) string { return node + NodeLSLink + "0" }

var nodeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// NodeName is the node block's file name for a GPU (by its UUID).
func NodeName(uuid string) string { return "node-" + nodeName.ReplaceAllString(uuid, "_") }

// The modes of what carve makes for a GPU in a Shared directory (the node
// directory), where only root's carve writes them (WritesNodes): the node
// block, read by all, the GPU's directory, and each LS file, its tenant's
// user's (the owner of its control block) and read by all; each user's
// BE file is BEUserPerm. Elsewhere they are their user's alone, mode 0600
// (0700), and in a claim's directory the node block is root's, mode 0644
// (ShareNode).
const (
	NodeSharedPerm os.FileMode = 0o644
	NodeDirPerm    os.FileMode = 0o755
	LSSharedPerm   os.FileMode = 0o644
)

// ShareNode makes the node block at path fit to link into a claim's
// directory, whose containers run under any uid: the block mode 0644 (they
// read it, carve-dra alone writes it) and the GPU's directory 0755 (their
// containers get it read-only; a BE claim writes its own BE file there
// through its link, MakeBE).
func ShareNode(path string) error {
	if err := os.Chmod(path, NodeSharedPerm); err != nil {
		return fmt.Errorf("node block: %w", err)
	}
	if err := os.Chmod(path+NodeDirSuffix, NodeDirPerm); err != nil {
		return fmt.Errorf("node block: %w", err)
	}
	return nil
}

// Node is a mapped node block.
type Node struct {
	Path string
	mem  []byte
	b    *NodeBlock
	ro   bool // mapped read-only: the caller does not write dir's node blocks (WritesNodes)
}

// OpenNode maps the node block name in dir, creating it for a GPU with the
// given live TPCs if there is none, with the GPU's directory.
// In a Shared directory one of another owner or mode (a user's carve made
// them before root's alone did) is taken over in place (adopt). It is for
// the caller that writes dir's node blocks (WritesNodes) alone; call it
// under the placement lock.
func OpenNode(dir, name string, live topo.Enable) (*Node, error) {
	path := filepath.Join(dir, name)
	if !WritesNodes(dir) {
		return nil, fmt.Errorf("node block %s: in the node directory only root's carve makes and writes it", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if os.IsNotExist(err) {
		return createNode(path, live)
	}
	if err != nil {
		return nil, fmt.Errorf("node block: %w", err)
	}
	defer f.Close()
	n, err := mapNode(path, f, true)
	if err != nil {
		return nil, err
	}
	if magic, version, size := n.b.Magic, n.b.Version, n.b.Size; magic != NodeMagic || version != NodeVersion || int(size) != NodeSize {
		n.Close() // n.b is gone with it
		return nil, fmt.Errorf("node block %s: magic %#x version %d, this carve's is %d (left by another release? "+
			"with no LS or BE tenant running, remove it)", path, magic, version, NodeVersion)
	}
	if Shared(dir) {
		if err := adopt(path, f, os.Geteuid(), os.Getegid(), NodeSharedPerm, 1); err != nil {
			n.Close()
			return nil, fmt.Errorf("node block: %w", err)
		}
	}
	n.resetLease()
	if err := n.makeDir(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// PeekNode maps the node block name in dir read-only, as any user may:
// for what it says (Seated), never to write it.
func PeekNode(dir, name string) (*Node, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("node block: %w", err)
	}
	defer f.Close()
	n, err := mapNode(path, f, false)
	if err != nil {
		return nil, err
	}
	if n.b.Magic != NodeMagic || n.b.Version != NodeVersion {
		n.Close()
		return nil, fmt.Errorf("node block %s: magic %#x version %d, this carve's is %d", path, n.b.Magic, n.b.Version, NodeVersion)
	}
	return n, nil
}

// mapNode maps the node block f (at path), for writing where rw.
func mapNode(path string, f *os.File, rw bool) (*Node, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != NodeSize {
		return nil, fmt.Errorf("node block %s has the wrong size", path)
	}
	prot := syscall.PROT_READ
	if rw {
		prot |= syscall.PROT_WRITE
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, NodeSize, prot, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return &Node{Path: path, mem: mem, b: (*NodeBlock)(unsafe.Pointer(&mem[0])), ro: !rw}, nil
}

// adopt makes the file f (at path) of a Shared directory uid's (and gid's,
// where gid >= 0) and of mode perm, in place, where it is not: what a
// user's carve made there before only root's did (a node block of mode
// 0666, the GPU's directory, an LS file of a tenant of another user's).
// Shims have it mapped, so it keeps its inode; f was opened without
// following a link, and one that is not a regular file or directory, or a
// file of more than links links (a name of another file), is refused.
// Descriptors opened before keep what they were given.
func adopt(path string, f *os.File, uid, gid int, perm os.FileMode, links uint64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("%s: no owner", path)
	case int(sys.Uid) == uid && (gid < 0 || int(sys.Gid) == gid) && st.Mode().Perm() == perm && st.Mode()&os.ModeSticky == 0:
		return nil
	case !st.Mode().IsRegular() && !st.IsDir(), st.Mode().IsRegular() && uint64(sys.Nlink) > links:
		return fmt.Errorf("%s is %s of %d links, not one carve made: with no LS or BE tenant running, remove it",
			path, st.Mode().Type(), sys.Nlink)
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("%s is %s's: %w", path, UserName(sys.Uid), err)
	}
	return f.Chmod(perm)
}

func createNode(path string, live topo.Enable) (*Node, error) {
	tmp := path + ".new"
	perm := os.FileMode(0o600)
	if Shared(filepath.Dir(path)) {
		perm = NodeSharedPerm // every user's tenants read it; root's carve alone writes it
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
	n, err := mapNode(path, f, true)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	b := n.b
	b.Magic, b.Version, b.Size = NodeMagic, NodeVersion, NodeSize
	b.Live, b.LeaseNS, b.CreatedNS = live, uint64(NodeLease), uint64(time.Now().UnixNano())
	if err := n.makeDir(); err != nil {
		n.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		n.Close()
		os.Remove(tmp)
		return nil, err
	}
	return n, nil
}

// makeDir makes the GPU's directory beside the block, if there is none
// (its BE files are made by BEFiles): in a Shared directory NodeDirPerm
// (root's carve alone makes LS and BE files there), and one a user made
// there before is taken over (adoptDir); else the caller's alone.
func (n *Node) makeDir() error {
	d := n.Path + NodeDirSuffix
	shared := Shared(filepath.Dir(n.Path))
	dperm := os.FileMode(0o700)
	if shared {
		dperm = NodeDirPerm
	}
	if err := os.Mkdir(d, 0o700); err == nil {
		if err := os.Chmod(d, dperm); err != nil {
			return fmt.Errorf("node block's directory: %w", err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("node block's directory: %w", err)
	}
	st, err := os.Lstat(d)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("node block's directory %s is not a directory: with no LS or BE tenant running, remove it", d)
	}
	if shared {
		if err := adoptDir(d, dperm); err != nil {
			return err
		}
	} else if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
		// one a user made first would let that user rename the LS files
		// in it: it must be root's or the caller's
		return fmt.Errorf("node block's directory %s is another user's: with no LS or BE tenant running, remove it", d)
	}
	return nil
}

// adoptDir takes over, in a Shared directory, the GPU's directory d that
// a user's carve made before root's alone did: the caller's, of mode
// dperm (adopt). Seats takes over the LS files in it, BEFiles the BE
// files (or removes them).
func adoptDir(d string, dperm os.FileMode) error {
	df, err := os.OpenFile(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("node block's directory: %w", err)
	}
	err = adopt(d, df, os.Geteuid(), os.Getegid(), dperm, 0)
	df.Close()
	if err != nil {
		return fmt.Errorf("node block's directory: %w", err)
	}
	return nil
}

// makeFile makes the file path of size bytes and mode perm (past the
// umask), uid's where uid >= 0, written by fill through a mapping before
// it appears there. It is written as a new file of a name no one could
// have chosen before (os.CreateTemp: O_EXCL), never through one someone
// put in its place.
func makeFile(path string, perm os.FileMode, uid, size int, fill func([]byte)) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	defer f.Close()
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil && uid >= 0 && uid != os.Geteuid() {
		err = f.Chown(uid, -1)
	}
	if err == nil {
		err = f.Truncate(int64(size))
	}
	var mem []byte
	if err == nil {
		mem, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	}
	if err == nil {
		fill(mem)
		syscall.Munmap(mem)
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Nodes maps every node block in dir; close each. They are mapped for
// writing where the caller writes dir's node blocks (WritesNodes), and
// in a Shared directory taken over where a user made them (OpenNode);
// else read-only, and the methods that write them do nothing.
func Nodes(dir string) ([]*Node, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "node-*"))
	if err != nil {
		return nil, err
	}
	rw, shared := WritesNodes(dir), Shared(dir)
	flag := os.O_RDONLY
	if rw {
		flag = os.O_RDWR
	}
	var out []*Node
	for _, p := range paths {
		if filepath.Ext(p) == ".new" || strings.HasSuffix(p, NodeDirSuffix) || strings.HasSuffix(p, NodeBELink) ||
			strings.Contains(filepath.Base(p), NodeLSLink) {
			continue
		}
		f, err := os.OpenFile(p, flag|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		n, err := mapNode(p, f, rw)
		if err == nil && (n.b.Magic != NodeMagic || n.b.Version != NodeVersion) {
			n.Close()
			err = errors.New("another layout")
		}
		if err == nil && rw && shared {
			if err = adopt(p, f, os.Geteuid(), os.Getegid(), NodeSharedPerm, 1); err == nil {
				err = n.makeDir()
			}
			if err != nil {
				n.Close()
			}
		}
		f.Close()
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// resetLease writes the lease carve sets into the block: a block of an
// older release, or one a user's carve wrote in the node directory, may
// say another, and the shims honour none longer.
func (n *Node) resetLease() {
	if !n.ro {
		atomic.StoreUint64(&n.b.LeaseNS, uint64(NodeLease))
	}
}

// Name is the block's file name.
func (n *Node) Name() string { return filepath.Base(n.Path) }

// Close unmaps the block.
func (n *Node) Close() error { return syscall.Munmap(n.mem) }

// Live is the GPU's live TPC bits.
func (n *Node) Live() topo.Enable { return n.b.Live }

// SetFixed sets the TPCs that LS tenants' launches keep off:
// those of the GPU's partitions that are neither LS nor BE, and the BE
// tenants' floors. Call it under the placement lock. A block mapped
// read-only (Nodes) is left.
func (n *Node) SetFixed(m topo.Enable) {
	if n.ro {
		return
	}
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

// LSSlot is a snapshot of one process of an LS tenant, in its seat.
type LSSlot struct {
	Slot     int
	PID      int // the process's, in its namespace
	Busy     bool
	Beat     time.Duration // since the last heartbeat (of CLOCK_MONOTONIC)
	BusyTime time.Duration
	Requests uint64
	Reserved topo.Enable
}

// LSPath is the LS file of seat i, as the table names it now.
func (n *Node) LSPath(i int) string { return n.lsPath(i) }

func (n *Node) lsPath(i int) string {
	return filepath.Join(n.Path+NodeDirSuffix, LSFileName(i, atomic.LoadUint32(&n.b.Slots[i].Serial)))
}

// mapLS maps the LS file path, for writing where rw; it is the caller's to
// unmap. A link, or a file of another size, is not mapped.
func mapLS(path string, rw bool) (*LSFile, []byte, *os.File, error) {
	flag, prot := os.O_RDONLY, syscall.PROT_READ
	if rw {
		flag, prot = os.O_RDWR, syscall.PROT_READ|syscall.PROT_WRITE
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != LSSize {
		f.Close()
		return nil, nil, nil, fmt.Errorf("LS file %s has the wrong size", path)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, LSSize, prot, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	return (*LSFile)(unsafe.Pointer(&mem[0])), mem, f, nil
}

// LS returns the processes of the seated LS tenants, each as its LS file
// says (one a tenant can read).
func (n *Node) LS() (out []LSSlot) {
	now := monotonicNS()
	used := atomic.LoadUint32(&n.b.Used)
	for i := range n.b.Slots {
		if used&(1<<i) == 0 {
			continue
		}
		out = append(out, n.lsProcs(i, now)...)
	}
	return out
}

// lsProcs are the processes of seat i's LS file (LS).
func (n *Node) lsProcs(i int, now int64) (out []LSSlot) {
	var reserved topo.Enable
	for j := range reserved {
		reserved[j] = atomic.LoadUint32(&n.b.Slots[i].Reserved[j])
	}
	path := n.lsPath(i)
	ls, mem, f, err := mapLS(path, false)
	if err != nil {
		return nil
	}
	defer f.Close()
	defer syscall.Munmap(mem)
	guarded(path, func() { out = lsProcsOf(ls, i, reserved, now) }) // its tenant may cut it short meanwhile
	return out
}

func lsProcsOf(ls *LSFile, i int, reserved topo.Enable, now int64) (out []LSSlot) {
	for j := range ls.Procs {
		p := &ls.Procs[j]
		pid := atomic.LoadUint32(&p.PID)
		if pid == 0 {
			continue
		}
		l := LSSlot{Slot: i, PID: int(pid), Busy: atomic.LoadUint32(&p.Busy) != 0, Reserved: reserved,
			BusyTime: time.Duration(atomic.LoadUint64(&p.BusyNS)), Requests: atomic.LoadUint64(&p.Requests)}
		if beat := atomic.LoadUint64(&p.BeatNS); beat != 0 {
			l.Beat = time.Duration(now - int64(beat))
		}
		out = append(out, l)
	}
	return out
}

// LSProcLock is the byte of an LS file whose POSIX record lock is entry
// i's (CARVE_LS_PROC_LOCK): its process holds it for life.
func LSProcLock(i int) int64 {
	return int64(unsafe.Offsetof(LSFile{}.Procs)) + int64(i)*int64(unsafe.Sizeof(LSProc{}))
}

// Reclaim frees the entries of LS tenants' processes that have ended,
// in the LS files the caller may write: those whose lock no process
// holds. It takes each such entry's lock while it clears it, so that a
// process taking the entry at the same moment is never undone, and it
// needs no pid, so it is right for tenants in containers too. It writes
// the lease carve sets into the block again (NodeLease). An LS file the
// caller may not write (another user's) is left: its dead entries hold no
// BE back for longer than the lease. A block mapped read-only (Nodes) is
// left.
func (n *Node) Reclaim() int {
	if n.ro {
		return 0
	}
	n.resetLease()
	freed := 0
	used := atomic.LoadUint32(&n.b.Used)
	for i := range n.b.Slots {
		if used&(1<<i) != 0 {
			freed += reclaimLS(n.lsPath(i))
		}
	}
	return freed
}

func reclaimLS(path string) (freed int) {
	ls, mem, f, err := mapLS(path, true)
	if err != nil {
		return 0
	}
	defer f.Close() // lets go of every lock taken here
	defer syscall.Munmap(mem)
	guarded(path, func() { freed = reclaimProcs(ls, f) }) // its tenant may cut it short meanwhile
	return freed
}

// reclaimProcs frees the entries of ls (its file f) whose lock no process
// holds. The locks it takes are of f's open file description (F_OFD_SETLK,
// which the shims' record locks conflict with): a lock of the process's
// would go when any other descriptor of the file in it closes (carve
// daemon's listing of the same file, meanwhile), and a process taking the
// entry then could have its pid and busy state cleared.
func reclaimProcs(ls *LSFile, f *os.File) (freed int) {
	for i := range ls.Procs {
		p := &ls.Procs[i]
		if atomic.LoadUint32(&p.PID) == 0 {
			continue
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: LSProcLock(i), Len: 1}
		if unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk) != nil {
			continue // its process runs
		}
		atomic.StoreUint32(&p.Busy, 0)
		atomic.AndUint32(&ls.Busy, ^(uint32(1) << i))
		atomic.StoreUint32(&p.PID, 0)
		freed++
		lk.Type = unix.F_UNLCK
		unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	}
	return freed
}
