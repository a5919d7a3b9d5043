// A mapped control block (Handle): opening, closing and removing it, and
// the setters carve set, placement and the SLO controller publish through
// it: the mask, the tide policy (and a BE's share and queue, steered) and
// the memory limit.

package ctl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/topo"
)

// Handle is a mapped control block.
type Handle struct {
	Path string
	f    *os.File
	mem  []byte
	b    *Block
	ro   bool // mapped read-only: another user's block (Writable)
}

func mapFile(path string, f *os.File) (*Handle, error) {
	return mapAs(path, f, false)
}

func mapAs(path string, f *os.File, ro bool) (*Handle, error) {
	prot := syscall.PROT_READ | syscall.PROT_WRITE
	if ro {
		prot = syscall.PROT_READ
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, Size, prot, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return &Handle{Path: path, f: f, mem: mem, b: (*Block)(unsafe.Pointer(&mem[0])), ro: ro}, nil
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
// os.ErrNotExist when there is none, and is a *Bad when there is one carve
// cannot read. It follows no symbolic link, waits on no FIFO and maps only
// a regular file of Size bytes. Another user's block (in a Shared
// directory, mode 0644) is mapped read-only: its setters return Writable's
// error.
func openPath(path string) (*Handle, error) {
	ro := false
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrPermission) {
		ro = true
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = checkFile(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	h, err := mapAs(path, f, ro)
	if err != nil {
		f.Close()
		return nil, err
	}
	var magic uint32
	var version, size uint16
	if err := guarded(path, func() { magic, version, size = h.b.Magic, h.b.Version, h.b.Size }); err != nil {
		h.Close()
		return nil, err
	}
	if magic != Magic || version != Version || size != Size {
		h.Close() // unmaps h.b: say what it held from the copies
		return nil, &Bad{Path: path, Reason: "magic", Why: fmt.Sprintf("control block %s: magic %#x version %d size %d, want %#x %d %d (carve and libcarve.so from different releases?)",
			path, magic, version, size, Magic, Version, Size)}
	}
	return h, nil
}

// OpenPath maps the block in the file path (an Entry's), as Read found
// it; the error is a *Bad where carve cannot read it.
func OpenPath(path string) (*Handle, error) { return openPath(path) }

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
	if err := h.Writable(); err != nil {
		return 0, err
	}
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
	if err := h.Writable(); err != nil {
		return 0, err
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
// launch. It writes nothing to another user's block (Writable).
func (h *Handle) SetTide(t Tide) {
	if h.ro {
		return
	}
	atomic.StoreUint32(&h.b.InflightMax, uint32(t.InflightMax))
	atomic.StoreUint32(&h.b.SharePPM, uint32(t.Share*1e6))
	atomic.StoreUint64(&h.b.EpochNS, uint64(t.Epoch))
	atomic.StoreUint32(&h.b.QueueUS, uint32(t.Queue.Microseconds()))
	atomic.StoreUint32(&h.b.SliceUS, uint32(t.Slice.Microseconds()))
}

// Steer sets a BE tenant's share and queue for the SLO controller
// (internal/slo); the shim reads them at its next launch. The first time,
// it keeps what the tenant asked of them (Snapshot.Steered), for Unsteer:
// read before it marks the block steered by a compare-and-swap, so that
// of callers at once only one keeps them, and none keeps a share another
// has already steered. The error is a *Bad where the block's file was
// cut short.
func (h *Handle) Steer(share float64, queue time.Duration) error {
	if err := h.Writable(); err != nil {
		return err
	}
	return guarded(h.Path, func() {
		asked, askedQueue := atomic.LoadUint32(&h.b.SharePPM), atomic.LoadUint32(&h.b.QueueUS)
		if atomic.CompareAndSwapUint32(&h.b.SLOSteered, 0, 1) {
			atomic.StoreUint32(&h.b.AskedShare, asked)
			atomic.StoreUint32(&h.b.AskedQueueUS, askedQueue)
		}
		atomic.StoreUint32(&h.b.SharePPM, uint32(math.Round(share*1e6)))
		atomic.StoreUint32(&h.b.QueueUS, uint32(queue.Microseconds()))
	})
}

// PauseMax is CARVE_PAUSE_MAX_NS: the most a BE launch is held by a pause
// (Pause), whatever the block says.
const PauseMax = 500 * time.Millisecond

// Pause holds a BE tenant's launches, LS work in flight or not, until
// until (CLOCK_MONOTONIC, the clock every process of the host shares:
// Mono), each for PauseMax at most; the zero time ends a pause. The SLO
// controller pauses the BE tenants while it calibrates an LS tenant's
// periods alone (internal/slo/calibrate.go), or while it holds an LS
// tenant over its goal with them at the bottom of their share
// (slo.ZeroSteps), and renews it each step.
func (h *Handle) Pause(until time.Duration) error {
	if err := h.Writable(); err != nil {
		return err
	}
	return guarded(h.Path, func() { atomic.StoreUint64(&h.b.PauseUntilNS, uint64(max(until, 0))) })
}

// Unsteer puts back what a BE tenant asked of its share and queue, where
// Steer changed them; else it writes nothing.
func (h *Handle) Unsteer() error {
	if err := h.Writable(); err != nil {
		return err
	}
	return guarded(h.Path, func() {
		if atomic.LoadUint32(&h.b.SLOSteered) == 0 {
			return
		}
		atomic.StoreUint32(&h.b.SharePPM, atomic.LoadUint32(&h.b.AskedShare))
		atomic.StoreUint32(&h.b.QueueUS, atomic.LoadUint32(&h.b.AskedQueueUS))
		atomic.StoreUint32(&h.b.SLOSteered, 0)
	})
}

// SetSLOTarget writes the target the SLO controller holds an LS tenant's
// estimate under (0: none yet), which carve ls and top judge its periods
// against (Snapshot.TideStatus.SLOTarget).
func (h *Handle) SetSLOTarget(d time.Duration) error {
	if err := h.Writable(); err != nil {
		return err
	}
	us := min(max(d.Microseconds(), 0), math.MaxUint32)
	return guarded(h.Path, func() { atomic.StoreUint32(&h.b.SLOTarget, uint32(us)) })
}

// SetMemLimit changes the bytes of GPU memory the tenant may allocate (0:
// no limit); the shim applies it to its next allocation.
func (h *Handle) SetMemLimit(bytes uint64) error {
	if err := h.Writable(); err != nil {
		return err
	}
	atomic.StoreUint64(&h.b.MemLimit, bytes)
	return nil
}
