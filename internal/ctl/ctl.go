// Package ctl is carve's side of the control blocks shared with libcarve.so:
// one small file per partitioned process, mapped by both, holding the
// process's TPC mask and the shim's counters. The layout is defined in
// shim/carve_ctl.h; Block mirrors it and TestLayoutMatchesHeader checks it.
package ctl

import (
	"bytes"
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
)

// Values shared with shim/carve_ctl.h.
const (
	Magic   = 0x45565243
	Version = 1
	Size    = 512

	StateNew               = 0
	StateHooked            = 1
	StateUnhooked          = 2
	StateNoDriver          = 3
	FlagAllowUnpartitioned = 1

	ClassNone = 0
	ClassLS   = 1
	ClassBE   = 2
)

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
	Gate         uint32     `c:"gate"`
	BudgetBytes  uint64     `c:"budget_bytes"`
	Reserved     [14]uint64 `c:"reserved"`
	Comm         [256]byte  `c:"comm"`
	Pad          [16]byte   `c:"pad"`
}

var _ [Size - unsafe.Sizeof(Block{})]byte // Block is exactly Size bytes
var _ [unsafe.Sizeof(Block{}) - Size]byte

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
	path := filepath.Join(dir, strconv.Itoa(pid))
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("process %d is not partitioned by carve (no control block in %s)", pid, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("control block of %d: %w", pid, err)
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
	if b := h.b; b.Magic != Magic || b.Version != Version || b.Size != Size {
		h.Close()
		return nil, fmt.Errorf("control block %s: magic %#x version %d size %d, want %#x %d %d (carve and libcarve.so from different releases?)",
			path, b.Magic, b.Version, b.Size, Magic, Version, Size)
	}
	return h, nil
}

// Init is what a new block starts with.
type Init struct {
	PID   int
	Mask  [4]uint32
	Live  [4]uint32
	Flags uint32
	Comm  []string
}

// Create writes the block of in.PID into dir: filled under a temporary name,
// then renamed, so that no reader sees it half written.
func Create(dir string, in Init) (*Handle, error) {
	path := filepath.Join(dir, strconv.Itoa(in.PID))
	tmp := filepath.Join(dir, fmt.Sprintf(".%d.new", in.PID))
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
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
	b.PID, b.Flags = uint32(in.PID), in.Flags
	b.StartTicks, _ = StartTicks(in.PID)
	b.CreatedNS = uint64(time.Now().UnixNano())
	b.Gen = 2
	b.Mask, b.Live = in.Mask, in.Live
	copy(b.Comm[:len(b.Comm)-1], strings.Join(in.Comm, "\x00"))
	if err := os.Rename(tmp, path); err != nil {
		h.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	return h, nil
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

// SetMask publishes a new TPC-disable mask (seqlock write side, under an
// exclusive flock so that two writers never interleave). The shim applies
// it from the process's next launch. Returns the new generation.
func (h *Handle) SetMask(m [4]uint32) (uint64, error) {
	if err := syscall.Flock(int(h.f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("locking %s: %w", h.Path, err)
	}
	defer syscall.Flock(int(h.f.Fd()), syscall.LOCK_UN)
	odd := atomic.LoadUint64(&h.b.Gen) | 1 // a writer that died mid-write left it odd
	atomic.StoreUint64(&h.b.Gen, odd)
	for i, w := range m {
		atomic.StoreUint32(&h.b.Mask[i], w)
	}
	atomic.StoreUint64(&h.b.Gen, odd+1)
	return odd + 1, nil
}

// Snapshot is a consistent copy of a block's fields.
type Snapshot struct {
	PID        int
	StartTicks uint64
	Flags      uint32
	Gen        uint64
	Mask, Live [4]uint32
	State      uint32
	TMDVersion uint32
	Launches   uint64
	LastLaunch time.Time // zero when none
	Created    time.Time
	Refused    uint64
	AppliedGen uint64
	Command    []string
}

// Snapshot reads the block; the mask comes from a seqlock read.
func (h *Handle) Snapshot() Snapshot {
	b := h.b
	s := Snapshot{PID: int(b.PID), StartTicks: b.StartTicks, Flags: b.Flags}
	for tries := 0; ; tries++ {
		g1 := atomic.LoadUint64(&b.Gen)
		if g1&1 == 1 && tries < 1000 { // a writer that died mid-write leaves it odd
			time.Sleep(time.Microsecond)
			continue
		}
		for i := range s.Mask {
			s.Mask[i] = atomic.LoadUint32(&b.Mask[i])
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
	comm := bytes.TrimRight(b.Comm[:], "\x00")
	if len(comm) > 0 {
		s.Command = strings.Split(string(comm), "\x00")
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

// List returns the blocks of live processes in dir, by pid, and removes the
// files of processes that have died (and leftovers of interrupted creation).
func List(dir string) ([]Entry, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []Entry
	for _, de := range names {
		name := de.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".new") {
			pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "."), ".new"))
			if err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
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
		h.Close()
		if !s.Alive() {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		out = append(out, Entry{Snapshot: s, Path: filepath.Join(dir, name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}
