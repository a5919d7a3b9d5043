// Package hook registers carve's own launch callback with the driver, for
// the kernels carve launches itself (topology discovery, benchmarks). Other
// processes get theirs from libcarve.so.
package hook

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/tmd"
	"github.com/carve-gpu/carve/internal/topo"
)

// The driver's launch-tools export table (see HARDWARE.md, section 1).
var toolsUUID = [16]byte{0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e, 0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b}

const (
	subscribeEntry = 3
	enableEntry    = 6
	launchDomain   = 0xb
	launchCbid     = 1

	alreadyAcquired cuda.Result = 210 // CUDA_ERROR_ALREADY_ACQUIRED
)

// Hook applies a mask to every launch of this process while one is set.
type Hook struct {
	mask   atomic.Pointer[topo.Disable]
	badVer atomic.Int32 // last unsupported descriptor version, 0 if none
}

var (
	installed *Hook
	once      sync.Once
	onceErr   error
)

// Install registers the process's hook (once). cuda.Load must have run.
func Install() (*Hook, error) {
	once.Do(func() {
		h := &Hook{}
		onceErr = register(h)
		if onceErr == nil {
			installed = h
		}
	})
	return installed, onceErr
}

func register(h *Hook) error {
	table, err := cuda.ExportTable(toolsUUID)
	if err != nil {
		return fmt.Errorf("launch-tools interface: %w", err)
	}
	// the table is driver memory, outside Go's heap
	base := *(*unsafe.Pointer)(unsafe.Pointer(&table))
	entry := func(i int) uintptr { return *(*uintptr)(unsafe.Add(base, i*8)) }
	fns := []uintptr{subscribeEntry: entry(subscribeEntry), enableEntry: entry(enableEntry)}
	if fns[subscribeEntry] == 0 || fns[enableEntry] == 0 {
		return errors.New("launch-tools interface: empty export table")
	}
	var subscribe func(*uint32, uintptr, uintptr) int32
	var enable func(uint32, uint32, int32, int32) int32
	purego.RegisterFunc(&subscribe, fns[subscribeEntry])
	purego.RegisterFunc(&enable, fns[enableEntry])
	cb := purego.NewCallback(func(_ uintptr, domain, cbid int32, params unsafe.Pointer) {
		if domain == launchDomain && cbid == launchCbid && params != nil {
			h.onLaunch(params)
		}
	})
	var handle uint32
	if rc := subscribe(&handle, cb, 0); rc != 0 {
		if cuda.Result(rc) == alreadyAcquired {
			return fmt.Errorf("launch-tools subscribe: %w: the driver takes one launch-callback subscriber per process, "+
				"and another (libcarve.so, a profiler) holds it", cuda.Result(rc))
		}
		return fmt.Errorf("launch-tools subscribe: %w", cuda.Result(rc))
	}
	if rc := enable(1, handle, launchDomain, launchCbid); rc != 0 {
		return fmt.Errorf("launch-tools enable: %w", cuda.Result(rc))
	}
	return nil
}

func (h *Hook) onLaunch(params unsafe.Pointer) {
	m := h.mask.Load()
	if m == nil {
		return
	}
	d := tmd.FromParams(params)
	if d == nil {
		return
	}
	if !tmd.WriteMask(d, *m) {
		h.badVer.Store(int32(tmd.Version(d)))
	}
}

// SetMask sets the TPC-disable mask for the following launches; nil clears it.
// Callers must have checked the mask against the live TPCs.
func (h *Hook) SetMask(m *topo.Disable) { h.mask.Store(m) }

// Unsupported returns the last descriptor version the hook could not mask.
func (h *Hook) Unsupported() int { return int(h.badVer.Load()) }
