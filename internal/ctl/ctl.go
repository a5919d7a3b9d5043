// Package ctl is carve's side of the control blocks shared with libcarve.so:
// one small file per partitioned process, mapped by both, holding the
// process's TPC mask and the shim's counters. The layout is defined in
// shim/carve_ctl.h; Block mirrors it and TestLayoutMatchesHeader checks it.
// It knows blocks, not TPCs: turning specs into masks is internal/partition's.
package ctl

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/topo"
)

// Values shared with shim/carve_ctl.h.
const (
	Magic   = 0x45565243
	Version = 5
	Size    = 3072
	GPUs    = 16 // GPUs a block holds partitions on: the header's, and GPUs-1 in its table

	StateNew               = 0
	StateHooked            = 1
	StateUnhooked          = 2
	StateNoDriver          = 3
	FlagAllowUnpartitioned = 1
	FlagAllSMs             = 2
	FlagMPS                = 4
	FlagLSOwn              = 8

	ClassNone = 0
	ClassLS   = 1
	ClassBE   = 2

	TideOff  = 0
	TideIdle = 1
	TideBusy = 2
	TideHeld = 3
)

// ClassName is a tenant class as people write it: "ls", "be", or "" for
// none.
func ClassName(c uint32) string { return map[uint32]string{ClassLS: "ls", ClassBE: "be"}[c] }

// ParseClass reads "ls", "be", or "none" (or "") for ClassNone.
func ParseClass(s string) (uint32, error) {
	switch s {
	case "ls":
		return ClassLS, nil
	case "be":
		return ClassBE, nil
	case "none", "":
		return ClassNone, nil
	}
	return 0, fmt.Errorf("class %q: want ls, be or none", s)
}

// Block mirrors struct carve_ctl; the c tags name the C fields.
type Block struct {
	Magic        uint32     `c:"magic"`
	Version      uint16     `c:"version"`
	Size         uint16     `c:"size"`
	PID          uint32     `c:"pid"`
	Flags        uint32     `c:"flags"`
	StartTicks   uint64     `c:"start_ticks"`
	CreatedNS    uint64     `c:"created_ns"`
	Gen          uint64     `c:"gen"`
	Mask         [4]uint32  `c:"mask"`
	Live         [4]uint32  `c:"live"`
	State        uint32     `c:"state"`
	TMDVersion   uint32     `c:"tmd_version"`
	Launches     uint64     `c:"launches"`
	LastLaunchNS uint64     `c:"last_launch_ns"`
	Refused      uint64     `c:"refused"`
	AppliedGen   uint64     `c:"applied_gen"`
	TenantClass  uint32     `c:"tenant_class"`
	Pad0         uint32     `c:"pad0"`
	Pad1         uint64     `c:"pad1"`
	Tenant       uint32     `c:"tenant"`
	SMs          uint32     `c:"sms"`
	Fault        uint32     `c:"fault"`
	FaultClaim   uint32     `c:"fault_claim"`
	FaultNS      uint64     `c:"fault_ns"`
	FaultCall    [32]byte   `c:"fault_call"`
	GPU          [16]byte   `c:"gpu"`
	OtherLaunch  uint64     `c:"other_launches"`
	OtherGPU     [16]byte   `c:"other_gpu"`
	Reserved     [2]uint64  `c:"reserved"`
	Comm         [256]byte  `c:"comm"`
	InflightMax  uint32     `c:"inflight_max"`
	SharePPM     uint32     `c:"share_ppm"`
	EpochNS      uint64     `c:"epoch_ns"`
	Node         [64]byte   `c:"node"`
	TideState    uint32     `c:"tide_state"`
	Inflight     uint32     `c:"inflight"`
	HeldNS       uint64     `c:"held_ns"`
	HeldLaunches uint64     `c:"held_launches"`
	NarrowLaunch uint64     `c:"narrow_launches"`
	BusyNS       uint64     `c:"busy_ns"`
	Requests     uint64     `c:"requests"`
	QueueUS      uint32     `c:"queue_us"`
	KernelUS     uint32     `c:"kernel_us"`
	Floor        [4]uint32  `c:"floor"`
	MemLimit     uint64     `c:"mem_limit"`
	MemUsed      uint64     `c:"mem_used"`
	MemTotal     uint64     `c:"mem_total"`
	MemPeak      uint64     `c:"mem_peak"`
	MemRefused   uint64     `c:"mem_refused"`
	MemRefusedNS uint64     `c:"mem_refused_ns"`
	SliceUS      uint32     `c:"slice_us"`
	SliceFns     uint32     `c:"slice_fns"`
	Sliced       uint64     `c:"sliced"`
	SlicePieces  uint64     `c:"slice_pieces"`
	TideReserved [38]uint64 `c:"tide_reserved"`

	More         [GPUs - 1]BlockPart `c:"more"`
	MoreReserved [128]byte           `c:"more_reserved"`
}

// BlockPart mirrors struct carve_gpu_part: the partition on one more GPU
// of the tenant, as the block's header holds that of its first.
type BlockPart struct {
	GPU      [16]byte  `c:"gpu"`
	Mask     [4]uint32 `c:"mask"`
	Live     [4]uint32 `c:"live"`
	Floor    [4]uint32 `c:"floor"`
	SMs      uint32    `c:"sms"`
	Pad      uint32    `c:"pad"`
	Node     [48]byte  `c:"node"`
	Reserved uint64    `c:"reserved"`
}

var _ [Size - unsafe.Sizeof(Block{})]byte // Block is exactly Size bytes
var _ [unsafe.Sizeof(Block{}) - Size]byte
var _ [unsafe.Offsetof(Block{}.More) - 1024]byte // the table follows the first 1024 bytes
var _ [1024 - unsafe.Offsetof(Block{}.More)]byte

// Dir is the runtime directory of the calling user's control blocks:
// $CARVE_RUNTIME_DIR, else /dev/shm/carve-UID (shared memory), else
// TMPDIR/carve-UID. It is created 0700 and must be owned by the user.
func Dir() (string, error) {
	d := os.Getenv("CARVE_RUNTIME_DIR")
	if d == "" {
		base := "/dev/shm"
		if st, err := os.Stat(base); err != nil || !st.IsDir() {
			base = os.TempDir()
		}
		d = filepath.Join(base, fmt.Sprintf("carve-%d", os.Getuid()))
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("runtime directory: %w", err)
	}
	st, err := os.Lstat(d)
	if err != nil {
		return "", fmt.Errorf("runtime directory: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("runtime directory %s must be a directory owned by uid %d with mode 0700", d, os.Getuid())
	}
	return d, nil
}

// Handle is a mapped control block.
type Handle struct {
	Path string
	f    *os.File
	mem  []byte
	b    *Block
}

func mapFile(path string, f *os.File) (*Handle, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, Size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return &Handle{Path: path, f: f, mem: mem, b: (*Block)(unsafe.Pointer(&mem[0]))}, nil
}

// Open maps the block of pid in dir.
func Open(dir string, pid int) (*Handle, error) {
	h, err := openPath(filepath.Join(dir, strconv.Itoa(pid)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("process %d is not partitioned by carve (no control block in %s)", pid, dir)
	}
	return h, err
}

// openPath maps the block in the file path; the error wraps
// os.ErrNotExist when there is none.
func openPath(path string) (*Handle, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("control block %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil || st.Size() != Size {
		f.Close()
		return nil, fmt.Errorf("control block %s has the wrong size", path)
	}
	h, err := mapFile(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if magic, version, size := h.b.Magic, h.b.Version, h.b.Size; magic != Magic || version != Version || size != Size {
		h.Close() // unmaps h.b: say what it held from the copies
		return nil, fmt.Errorf("control block %s: magic %#x version %d size %d, want %#x %d %d (carve and libcarve.so from different releases?)",
			path, magic, version, size, Magic, Version, Size)
	}
	return h, nil
}

// Init is what a new block starts with.
type Init struct {
	PID    int
	Tenant int // the pid whose partition this is (default: PID)
	Mask   topo.Disable
	Live   topo.Enable
	SMs    int // of the partition
	Flags  uint32
	Class  uint32      // ClassNone, ClassLS or ClassBE
	Tide   Tide        // for LS and BE tenants
	Floor  topo.Enable // a BE tenant's floor TPCs, chosen for Policy.Floor
	Comm   []string

	MemLimit uint64 // bytes of GPU memory the tenant may allocate (0: no limit)

	GPU string // the UUID of the GPU the mask is of ("": not known, the shim masks launches on any)

	// More are the tenant's partitions on its other GPUs, each naming its
	// GPU (at most GPUs-1); the fields above are its first GPU's.
	More []Part
}

// Part is a tenant's partition on one GPU: the GPU's UUID and node block,
// the mask, the GPU's live TPCs, the partition's SMs and a BE tenant's
// floor. A block holds its first GPU's in its header (Init's and
// Snapshot's fields) and the others' in its table (More).
type Part struct {
	GPU   string       `json:"gpu"`
	Node  string       `json:"node,omitempty"`
	Mask  topo.Disable `json:"mask"`
	Live  topo.Enable  `json:"live"`
	SMs   int          `json:"sms"`
	Floor topo.Enable  `json:"floor"`
}

// Tide is what a block holds of an LS or BE tenant's policy (Policy.Apply
// writes it): for a BE tenant, launches in flight at most (0: no bound),
// the share of the time it may run while LS work is in flight and the
// period that share is counted over. Node names the GPU's node block in
// the runtime directory (NodeName of its UUID); carve records it for every
// partition, so that it also says which GPU a partition is on. Floor is
// how many TPCs the block's floor (Init.Floor) holds: read from it, never
// written.
type Tide struct {
	Node        string        `json:"node"`
	InflightMax int           `json:"inflight_max"`
	Queue       time.Duration `json:"queue"` // predicted GPU time in flight at most (0: no bound)
	Share       float64       `json:"share"`
	Epoch       time.Duration `json:"epoch"`
	Floor       int           `json:"floor"` // TPCs
	Slice       time.Duration `json:"slice"` // BE: pieces' length while an LS tenant is active (0: never cut)
}

// Create writes the block of in.PID into dir: filled under a temporary name,
// then renamed, so that no reader sees it half written.
func Create(dir string, in Init) (*Handle, error) {
	return create(filepath.Join(dir, strconv.Itoa(in.PID)), filepath.Join(dir, fmt.Sprintf(".%d.new", in.PID)), 0o600, in)
}

func create(path, tmp string, perm os.FileMode, in Init) (*Handle, error) {
	var gpu [16]byte
	if in.GPU != "" {
		var err error
		if gpu, err = ParseUUID(in.GPU); err != nil {
			return nil, fmt.Errorf("creating control block: %w", err)
		}
	}
	more, err := blockParts(in)
	if err != nil {
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	if err := f.Chmod(perm); err != nil { // past the umask
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	if err := f.Truncate(Size); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	h, err := mapFile(path, f)
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	b := h.b
	b.Magic, b.Version, b.Size = Magic, Version, Size
	b.PID, b.Flags, b.Tenant, b.TenantClass = uint32(in.PID), in.Flags, uint32(cmp.Or(in.Tenant, in.PID)), in.Class
	if in.PID != 0 {
		b.StartTicks, _ = StartTicks(in.PID)
	}
	b.CreatedNS = uint64(time.Now().UnixNano())
	b.Gen = 2
	b.Mask, b.Live, b.SMs = in.Mask, in.Live, uint32(in.SMs)
	b.GPU = gpu
	copy(b.Comm[:len(b.Comm)-1], strings.Join(in.Comm, "\x00"))
	copy(b.Node[:len(b.Node)-1], in.Tide.Node)
	b.InflightMax, b.SharePPM, b.EpochNS = uint32(in.Tide.InflightMax), uint32(in.Tide.Share*1e6), uint64(in.Tide.Epoch)
	b.QueueUS = uint32(in.Tide.Queue.Microseconds())
	b.SliceUS = uint32(in.Tide.Slice.Microseconds())
	b.Floor = in.Floor
	b.MemLimit = in.MemLimit
	b.More = more
	if err := os.Rename(tmp, path); err != nil {
		h.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	return h, nil
}

// blockParts is the table of in's other GPUs: each names its GPU, none
// twice nor the first's, and the first names its own.
func blockParts(in Init) (more [GPUs - 1]BlockPart, err error) {
	if len(in.More) > len(more) {
		return more, fmt.Errorf("partitions on %d GPUs: a block holds at most %d", len(in.More)+1, GPUs)
	}
	if len(in.More) > 0 && in.GPU == "" {
		return more, errors.New("a partition on several GPUs names each GPU, the first too")
	}
	seen := map[string]bool{in.GPU: true}
	for i, p := range in.More {
		u, err := ParseUUID(p.GPU)
		if err != nil {
			return more, err
		}
		if seen[FormatUUID(u)] {
			return more, fmt.Errorf("GPU %s named twice", p.GPU)
		}
		seen[FormatUUID(u)] = true
		if len(p.Node) >= len(more[i].Node) {
			return more, fmt.Errorf("node block name %q: longer than %d bytes", p.Node, len(more[i].Node)-1)
		}
		more[i] = BlockPart{GPU: u, Mask: p.Mask, Live: p.Live, Floor: p.Floor, SMs: uint32(p.SMs)}
		copy(more[i].Node[:], p.Node)
	}
	return more, nil
}

// Close unmaps the block.
func (h *Handle) Close() error {
	err := syscall.Munmap(h.mem)
	if cerr := h.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Remove deletes the block's file.
func (h *Handle) Remove() error { return os.Remove(h.Path) }

// SetMask publishes a new TPC-disable mask and the partition's SM count
// (seqlock write side, under an exclusive flock so that two writers never
// interleave). The shim applies it from the process's next launch. Returns
// the new generation.
func (h *Handle) SetMask(m topo.Disable, sms int) (uint64, error) {
	if err := syscall.Flock(int(h.f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("locking %s: %w", h.Path, err)
	}
	defer syscall.Flock(int(h.f.Fd()), syscall.LOCK_UN)
	odd := atomic.LoadUint64(&h.b.Gen) | 1 // a writer that died mid-write left it odd
	atomic.StoreUint64(&h.b.Gen, odd)
	for i, w := range m {
		atomic.StoreUint32(&h.b.Mask[i], w)
	}
	atomic.StoreUint32(&h.b.SMs, uint32(sms))
	atomic.StoreUint64(&h.b.Gen, odd+1)
	return odd + 1, nil
}

// SetPartMask publishes a new mask and SM count of the tenant's partition
// on GPU gpu, the first (SetMask) or one of its table, as SetMask does.
func (h *Handle) SetPartMask(gpu string, m topo.Disable, sms int) (uint64, error) {
	u, err := ParseUUID(gpu)
	if err != nil {
		return 0, err
	}
	if u == h.b.GPU {
		return h.SetMask(m, sms)
	}
	for i := range h.b.More {
		p := &h.b.More[i]
		if p.GPU != u {
			continue
		}
		if err := syscall.Flock(int(h.f.Fd()), syscall.LOCK_EX); err != nil {
			return 0, fmt.Errorf("locking %s: %w", h.Path, err)
		}
		defer syscall.Flock(int(h.f.Fd()), syscall.LOCK_UN)
		odd := atomic.LoadUint64(&h.b.Gen) | 1
		atomic.StoreUint64(&h.b.Gen, odd)
		for w, x := range m {
			atomic.StoreUint32(&p.Mask[w], x)
		}
		atomic.StoreUint32(&p.SMs, uint32(sms))
		atomic.StoreUint64(&h.b.Gen, odd+1)
		return odd + 1, nil
	}
	return 0, fmt.Errorf("%s holds no partition on %s", h.Path, gpu)
}

// SetTide changes a BE tenant's policy; the shim reads it at its next
// launch.
func (h *Handle) SetTide(t Tide) {
	atomic.StoreUint32(&h.b.InflightMax, uint32(t.InflightMax))
	atomic.StoreUint32(&h.b.SharePPM, uint32(t.Share*1e6))
	atomic.StoreUint64(&h.b.EpochNS, uint64(t.Epoch))
	atomic.StoreUint32(&h.b.QueueUS, uint32(t.Queue.Microseconds()))
	atomic.StoreUint32(&h.b.SliceUS, uint32(t.Slice.Microseconds()))
}

// SetMemLimit changes the bytes of GPU memory the tenant may allocate (0:
// no limit); the shim applies it to its next allocation.
func (h *Handle) SetMemLimit(bytes uint64) error {
	atomic.StoreUint64(&h.b.MemLimit, bytes)
	return nil
}

// Memory is what a block says of the tenant's GPU memory: its limit (0:
// none), what this process holds, what all the tenant's processes hold
// (from the account block: the tenant's first block, or a claim's root),
// the most they held, and the allocations refused at the limit.
type Memory struct {
	Limit, Used, Total, Peak, Refused uint64
	LastRefused                       time.Time // zero when none
}

// Snapshot is a consistent copy of a block's fields.
type Snapshot struct {
	PID        int
	Tenant     int // the pid carve run made the tenant's first block for
	StartTicks uint64
	Flags      uint32
	Class      uint32
	GPU        string // the UUID of the GPU the mask is of; "" not known
	Gen        uint64
	Mask       topo.Disable
	Live       topo.Enable
	Floor      topo.Enable // a BE tenant's floor TPCs
	SMs        int
	State      uint32
	TMDVersion uint32
	Launches   uint64
	LastLaunch time.Time // zero when none
	Created    time.Time
	Refused    uint64
	AppliedGen uint64
	Command    []string
	Fault      Fault
	Tide       Tide
	TideStatus TideStatus
	Memory     Memory

	// launches on another GPU than the mask's, which ran on all its TPCs
	// (allowed unpartitioned), and the last such GPU's UUID
	OtherLaunches uint64
	OtherGPU      string

	// More are the partitions on the tenant's other GPUs (the fields
	// above are its first's), masks and SM counts read with Mask.
	More []Part
}

// Parts are the partitions on each of the tenant's GPUs: its first, then
// More.
func (s Snapshot) Parts() []Part {
	first := Part{GPU: s.GPU, Node: s.Tide.Node, Mask: s.Mask, Live: s.Live, SMs: s.SMs, Floor: s.Floor}
	return append([]Part{first}, s.More...)
}

// GPUs are the UUIDs of the GPUs the tenant has partitions on, in order
// (none for a block that names no GPU).
func (s Snapshot) GPUs() []string {
	var out []string
	for _, p := range s.Parts() {
		if p.GPU != "" {
			out = append(out, p.GPU)
		}
	}
	return out
}

// TideStatus is what an LS or BE tenant's shim says of its work.
type TideStatus struct {
	State        uint32        `json:"state"` // TideOff, TideIdle, TideBusy or TideHeld
	Inflight     int           `json:"inflight"`
	Held         time.Duration `json:"held"` // BE: time launches waited for LS work
	HeldLaunches uint64        `json:"held_launches"`
	NarrowLaunch uint64        `json:"narrow_launches"` // BE: launches made while LS work was in flight
	Busy         time.Duration `json:"busy"`            // LS: time with work in flight
	Requests     uint64        `json:"requests"`        // LS: times it went from idle to busy
	Kernel       time.Duration `json:"kernel"`          // BE: its kernels\' time, as measured
	Sliced       uint64        `json:"sliced"`          // BE: launches cut into pieces
	SlicePieces  uint64        `json:"slice_pieces"`    // BE: the pieces they went as
}

// FaultNames are the driver errors the shim records as faults (see
// CARVE_FAULTS in shim/carve_ctl.h), by CUresult.
var FaultNames = map[uint32]string{
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	710: "CUDA_ERROR_ASSERT",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
	806: "CUDA_ERROR_MPS_RPC_FAILURE",
	807: "CUDA_ERROR_MPS_SERVER_NOT_READY",
	810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	999: "CUDA_ERROR_UNKNOWN",
}

// Name is the fault's CUresult name.
func (f Fault) Name() string {
	if n, ok := FaultNames[f.Code]; ok {
		return n
	}
	return fmt.Sprintf("CUresult %d", f.Code)
}

// Fault is the first error a tenant's driver calls returned that ends its
// context's work (an illegal address, a failed launch, its MPS server
// gone): the CUresult, when, and the call that returned it.
type Fault struct {
	Code uint32
	At   time.Time
	Call string
}

// Snapshot reads the block; the mask comes from a seqlock read.
func (h *Handle) Snapshot() Snapshot {
	b := h.b
	s := Snapshot{PID: int(b.PID), Tenant: int(b.Tenant), StartTicks: b.StartTicks, Flags: b.Flags,
		Class: atomic.LoadUint32(&b.TenantClass)}
	if s.Tenant == 0 { // made by a shim that did not record it
		s.Tenant = s.PID
	}
	for tries := 0; ; tries++ {
		g1 := atomic.LoadUint64(&b.Gen)
		if g1&1 == 1 && tries < 1000 { // a writer that died mid-write leaves it odd
			time.Sleep(time.Microsecond)
			continue
		}
		for i := range s.Mask {
			s.Mask[i] = atomic.LoadUint32(&b.Mask[i])
		}
		s.SMs = int(atomic.LoadUint32(&b.SMs))
		s.More = s.More[:0]
		for i := range b.More {
			p := &b.More[i]
			if p.GPU == ([16]byte{}) { // written once, before the block is published
				break
			}
			node, _, _ := bytes.Cut(p.Node[:], []byte{0})
			part := Part{GPU: FormatUUID(p.GPU), Node: string(node), Live: p.Live, Floor: p.Floor, SMs: int(atomic.LoadUint32(&p.SMs))}
			for w := range part.Mask {
				part.Mask[w] = atomic.LoadUint32(&p.Mask[w])
			}
			s.More = append(s.More, part)
		}
		if len(s.More) == 0 {
			s.More = nil
		}
		if atomic.LoadUint64(&b.Gen) == g1 || tries >= 1000 {
			s.Gen = g1
			break
		}
	}
	for i := range s.Live {
		s.Live[i] = atomic.LoadUint32(&b.Live[i])
	}
	s.State = atomic.LoadUint32(&b.State)
	s.TMDVersion = atomic.LoadUint32(&b.TMDVersion)
	s.Launches = atomic.LoadUint64(&b.Launches)
	if ns := atomic.LoadUint64(&b.LastLaunchNS); ns != 0 {
		s.LastLaunch = time.Unix(0, int64(ns))
	}
	s.Created = time.Unix(0, int64(b.CreatedNS))
	s.Refused = atomic.LoadUint64(&b.Refused)
	s.AppliedGen = atomic.LoadUint64(&b.AppliedGen)
	s.GPU = FormatUUID(b.GPU) // written once, before the block is published
	if s.OtherLaunches = atomic.LoadUint64(&b.OtherLaunch); s.OtherLaunches > 0 {
		s.OtherGPU = FormatUUID(b.OtherGPU)
	}
	comm := bytes.TrimRight(b.Comm[:], "\x00")
	if len(comm) > 0 {
		s.Command = strings.Split(string(comm), "\x00")
	}
	node, _, _ := bytes.Cut(b.Node[:], []byte{0})
	s.Tide = Tide{Node: string(node), InflightMax: int(atomic.LoadUint32(&b.InflightMax)),
		Queue: time.Duration(atomic.LoadUint32(&b.QueueUS)) * time.Microsecond,
		Share: float64(atomic.LoadUint32(&b.SharePPM)) / 1e6, Epoch: time.Duration(atomic.LoadUint64(&b.EpochNS)),
		Slice: time.Duration(atomic.LoadUint32(&b.SliceUS)) * time.Microsecond}
	s.Floor = b.Floor // written once, before the block is published
	s.Tide.Floor = s.Floor.Count()
	s.TideStatus = TideStatus{State: atomic.LoadUint32(&b.TideState), Inflight: int(atomic.LoadUint32(&b.Inflight)),
		Held: time.Duration(atomic.LoadUint64(&b.HeldNS)), HeldLaunches: atomic.LoadUint64(&b.HeldLaunches),
		NarrowLaunch: atomic.LoadUint64(&b.NarrowLaunch), Busy: time.Duration(atomic.LoadUint64(&b.BusyNS)),
		Requests: atomic.LoadUint64(&b.Requests), Kernel: time.Duration(atomic.LoadUint32(&b.KernelUS)) * time.Microsecond,
		Sliced: atomic.LoadUint64(&b.Sliced), SlicePieces: atomic.LoadUint64(&b.SlicePieces)}
	s.Memory = Memory{Limit: atomic.LoadUint64(&b.MemLimit), Used: atomic.LoadUint64(&b.MemUsed),
		Peak: atomic.LoadUint64(&b.MemPeak), Refused: atomic.LoadUint64(&b.MemRefused)}
	if s.PID == 0 || s.PID == s.Tenant { // the account block
		s.Memory.Total = atomic.LoadUint64(&b.MemTotal)
	} else {
		s.Memory.Total = s.Memory.Used
	}
	if ns := atomic.LoadUint64(&b.MemRefusedNS); ns != 0 {
		s.Memory.LastRefused = time.Unix(0, int64(ns))
	}
	if code := atomic.LoadUint32(&b.Fault); code != 0 {
		call, _, _ := bytes.Cut(b.FaultCall[:], []byte{0})
		s.Fault = Fault{Code: code, At: time.Unix(0, int64(atomic.LoadUint64(&b.FaultNS))), Call: string(call)}
	}
	return s
}

// StartTicks reads field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot. With the pid it names one process for good.
func StartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Alive reports whether the process the block was made for still runs (the
// pid exists and, where recorded, started at the same time).
func (s Snapshot) Alive() bool {
	if err := syscall.Kill(s.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if s.StartTicks == 0 {
		return true
	}
	t, err := StartTicks(s.PID)
	return err == nil && t == s.StartTicks
}

// Entry is one listed block.
type Entry struct {
	Snapshot
	Path string
}

// KeepEnded is how long the block of a process that ended after a GPU fault
// is kept, so that carve ls can say what happened.
const KeepEnded = time.Hour

// List returns the blocks of live processes in dir, by pid. It removes the
// files of processes that have died (and leftovers of interrupted
// creation), except those that recorded a GPU fault, which Ended lists
// until they are KeepEnded old, and a tenant's first block while its
// children run (their memory account); what device memory a dead process
// held is first credited back to its tenant's account (CreditEnded).
func List(dir string) ([]Entry, error) {
	live, _, err := Scan(dir)
	return live, err
}

// Ended returns the blocks of processes that ended after a GPU fault, by
// the fault's time.
func Ended(dir string) ([]Entry, error) {
	_, ended, err := Scan(dir)
	return ended, err
}

// Scan returns the live blocks and those of processes that ended after a
// GPU fault, and removes the rest of the dead ones.
func Scan(dir string) (live, ended []Entry, err error) { return scan(dir, false) }

// scan lists dir's blocks. A process runs while its shim holds the lock on
// its block (Held); byLock: only then, for blocks whose pids belong to
// another PID namespace; else also while its pid runs with its start time
// (carve run makes a block before the program, and so its shim, starts).
func scan(dir string, byLock bool) (live, ended []Entry, err error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var dead []Entry
	for _, de := range names {
		name := de.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".new") {
			pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "."), ".new"))
			if err == nil && !byLock && syscall.Kill(pid, 0) == syscall.ESRCH {
				os.Remove(filepath.Join(dir, name))
			}
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		h, err := Open(dir, pid)
		if err != nil {
			continue // half-made or foreign file: not ours to judge
		}
		s := h.Snapshot()
		alive := h.Held() || !byLock && s.Alive()
		if !alive && credit(dir, h) > 0 {
			s = h.Snapshot()
		}
		h.Close()
		e := Entry{Snapshot: s, Path: filepath.Join(dir, name)}
		if alive {
			live = append(live, e)
		} else {
			dead = append(dead, e)
		}
	}
	// the block of a tenant's first process is its children's memory
	// account: it stays while they run
	accounts := map[int]bool{}
	for _, e := range live {
		if e.Tenant != e.PID {
			accounts[e.Tenant] = true
		}
	}
	for _, e := range dead {
		switch {
		case e.Fault.Code != 0 && time.Since(e.Fault.At) < KeepEnded:
			ended = append(ended, e)
		case accounts[e.PID]:
		default:
			os.Remove(e.Path)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].PID < live[j].PID })
	sort.Slice(ended, func(i, j int) bool { return ended[i].Fault.At.Before(ended[j].Fault.At) })
	return live, ended, nil
}

// Held reports whether a process holds the lock on the block's file that a
// shim holds for its life (see shim/carve_ctl.h).
func (h *Handle) Held() bool {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := syscall.FcntlFlock(h.f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false
	}
	return lk.Type != syscall.F_UNLCK
}
