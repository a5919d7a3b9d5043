// A tenant's kernel table (Policy.Kernels): each kernel function of a
// program, by its mangled name, with the DRAM bytes and time Nsight
// Compute measured at its first launch (carve profile --table), as the
// JSON file people keep (KernelTable); the compact file carve writes of
// it beside the tenant's block for the shim (shim/carve_ctl.h's struct
// carve_kern_head, mirrored by KernHead and KernEntry); and what a block
// says of its launches by the table (KernelStatus).

package ctl

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/carve-gpu/carve/internal/jsonfile"
)

// Values shared with shim/carve_ctl.h.
const (
	KernMagic   = 0x4e52454b // "KERN"
	MaxKernels  = 16384      // entries a table holds at most
	KernCompute = 1          // an entry's flags: compute-bound
)

// ComputeBoundPct is the DRAM throughput, in percent of the GPU's peak,
// under which a kernel is compute-bound: tide lets a BE tenant's
// compute-bound kernels run beside busy LS work. Issue 33's study
// (results/h100-580.159.04-2026-11-27, bandwidth/) found a memory-bound
// victim slowed by about 0.6 x the share of the peak its neighbour
// streams, so a kernel under 30% costs such a victim at most about 18%
// while it runs, and on resnet50 the kernel families split there: the
// heavy ones at 58-84% of the peak (copies, GEMMs at 62%), an FMA-bound
// kernel at 21%.
const ComputeBoundPct = 30

// MaxKernelName and MaxKernelTable bound a table: a function's mangled
// name (a template-heavy one runs to a few thousand bytes), and the JSON
// file.
const (
	MaxKernelName  = 8192
	MaxKernelTable = 64 << 20
)

// Kernel is what a table holds of one kernel function, measured at its
// first launch.
type Kernel struct {
	Bytes uint64  `json:"bytes"` // DRAM bytes read and written
	NS    uint64  `json:"ns"`    // its time on the GPU
	Pct   float64 `json:"pct"`   // its DRAM throughput, percent of the GPU's peak
}

// ComputeBound says whether the kernel's DRAM throughput was under
// ComputeBoundPct of the peak.
func (k Kernel) ComputeBound() bool { return k.Pct < ComputeBoundPct }

// KernelTable is a program's kernel functions by mangled name, measured
// on the GPU named GPU.
type KernelTable struct {
	GPU     string            `json:"gpu"`
	Kernels map[string]Kernel `json:"kernels"`
}

// kernelTableKind is what jsonfile's errors call a kernel table.
var kernelTableKind = jsonfile.Kind{What: "a kernel table", Want: "a JSON file carve profile --table writes"}

// ParseKernelTable reads a table's JSON and checks it: at most
// MaxKernelTable bytes and MaxKernels functions, each named by 1 to
// MaxKernelName printable bytes, its throughput a percentage from 0 to
// 1000 (a measurement may pass 100 a little), no field unknown.
func ParseKernelTable(b []byte) (*KernelTable, error) {
	if len(b) > MaxKernelTable {
		return nil, fmt.Errorf("%d bytes: a kernel table has at most %d", len(b), MaxKernelTable)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var t KernelTable
	if err := d.Decode(&t); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more after the table's JSON")
	}
	if len(t.GPU) > 256 || strings.ContainsFunc(t.GPU, notPrintable) {
		return nil, fmt.Errorf("GPU name %.40q: want up to 256 printable characters", t.GPU)
	}
	if len(t.Kernels) > MaxKernels {
		return nil, fmt.Errorf("%d kernels: a table holds at most %d", len(t.Kernels), MaxKernels)
	}
	for name, k := range t.Kernels {
		if name == "" || len(name) > MaxKernelName || strings.ContainsFunc(name, notPrintable) {
			return nil, fmt.Errorf("kernel name %.60q: want 1 to %d printable bytes", name, MaxKernelName)
		}
		if !(k.Pct >= 0 && k.Pct <= 1000) {
			return nil, fmt.Errorf("kernel %.60q: DRAM throughput %g%% of peak: want 0 to 1000", name, k.Pct)
		}
	}
	if t.Kernels == nil {
		t.Kernels = map[string]Kernel{}
	}
	return &t, nil
}

func notPrintable(r rune) bool { return r == unicode.ReplacementChar || !unicode.IsPrint(r) }

// ReadKernelTable reads and checks the table at path.
func ReadKernelTable(path string) (*KernelTable, error) {
	b, err := jsonfile.Read(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseKernelTable(b)
	if err != nil {
		return nil, kernelTableKind.Not(path, err.Error())
	}
	return t, nil
}

// Save writes the table to path, through a temporary file.
func (t *KernelTable) Save(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ComputeBound counts the table's compute-bound kernels.
func (t *KernelTable) ComputeBound() int {
	n := 0
	for _, k := range t.Kernels {
		if k.ComputeBound() {
			n++
		}
	}
	return n
}

// KernHead mirrors struct carve_kern_head: the compact table's head.
type KernHead struct {
	Magic uint32 `c:"magic"`
	Count uint32 `c:"count"`
	ID    uint64 `c:"id"` // FNV-1a of the entries' bytes, never 0
}

// KernEntry mirrors struct carve_kern_entry: one kernel function of the
// compact table.
type KernEntry struct {
	Name  uint64 `c:"name"` // KernelHash of its mangled name
	Bytes uint64 `c:"bytes"`
	Flags uint32 `c:"flags"`
	Pad   uint32 `c:"pad"`
}

// KernelHash is a mangled name as the compact table keys it: its FNV-1a
// hash of 64 bits, as the shim hashes the names the driver gives.
func KernelHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// Compact is the table as the shim reads it, and its id. Two names of the
// same hash (which FNV-1a makes unlikely among a program's functions)
// are an error: the shim could tell neither's launches apart.
func (t *KernelTable) Compact() ([]byte, uint64, error) {
	entries := make([]KernEntry, 0, len(t.Kernels))
	names := map[uint64]string{}
	for name, k := range t.Kernels {
		e := KernEntry{Name: KernelHash(name), Bytes: k.Bytes}
		if other, ok := names[e.Name]; ok {
			return nil, 0, fmt.Errorf("kernels %.60q and %.60q have the same hash: the table cannot tell them apart", name, other)
		}
		names[e.Name] = name
		if k.ComputeBound() {
			e.Flags = KernCompute
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b KernEntry) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	var body bytes.Buffer
	binary.Write(&body, binary.LittleEndian, entries)
	h := fnv.New64a()
	h.Write(body.Bytes())
	id := h.Sum64()
	if id == 0 {
		id = 1 // 0 is no table
	}
	var out bytes.Buffer
	binary.Write(&out, binary.LittleEndian, KernHead{Magic: KernMagic, Count: uint32(len(entries)), ID: id})
	out.Write(body.Bytes())
	return out.Bytes(), id, nil
}

// KernelsFile is the compact table's file name of id (CARVE_KERN_NAME).
func KernelsFile(id uint64) string { return fmt.Sprintf("kernels-%016x", id) }

// writeKernels writes t's compact file into dir with mode perm, unless
// one of its id is there, and returns its id.
func writeKernels(dir string, t *KernelTable, perm os.FileMode) (uint64, error) {
	b, id, err := t.Compact()
	if err != nil {
		return 0, err
	}
	path := filepath.Join(dir, KernelsFile(id))
	if st, err := os.Lstat(path); err == nil {
		// the shim takes only this user's or root's: another user of a
		// shared directory may have made one of the name
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != uint32(os.Geteuid()) && sys.Uid != 0 {
			return 0, fmt.Errorf("kernel table: %s belongs to uid %d", path, sys.Uid)
		}
		if old, err := os.ReadFile(path); err == nil && st.Mode().IsRegular() && bytes.Equal(old, b) {
			return id, nil
		}
	}
	// a temporary name no one can make first (O_EXCL, random), renamed
	// into place
	f, err := os.CreateTemp(dir, "."+KernelsFile(id)+".*.new")
	if err != nil {
		return 0, fmt.Errorf("kernel table: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(perm) // past the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("kernel table: %w", err)
	}
	return id, nil
}

// Kernels is what a block holds of a tenant's kernel table: its path as
// named (Policy.Kernels) and, for Create to write beside the block, the
// table read from it (nil: no compact table, and the shim charges
// nothing).
type Kernels struct {
	Path  string
	Table *KernelTable
}

// KernelStatus is what the shim says of a tenant's launches by its
// kernel table (shim/kern.c).
type KernelStatus struct {
	Bytes   uint64 `json:"bytes"`   // the DRAM bytes of its launches, by the table
	Unknown uint64 `json:"unknown"` // launches of functions the table has no entry for
	// BE: launches of compute-bound kernels made beside busy LS work,
	// held by no share
	Beside uint64 `json:"beside"`
}

// checkKernelsPath is Normalize's rule for Policy.Kernels: a path the
// block can hold.
func checkKernelsPath(p string) error {
	if max := len(Block{}.KernelsPath) - 1; len(p) > max || strings.ContainsRune(p, 0) {
		return fmt.Errorf("a path of %d bytes: want at most %d", len(p), max)
	}
	return nil
}
