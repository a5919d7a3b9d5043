// Making a control block: what it starts with (Init, with its Parts on
// each GPU and its Tide policy) and Create, which fills it under a
// temporary name before any reader can see it.

package ctl

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/carve-gpu/carve/internal/topo"
)

// Init is what a new block starts with.
type Init struct {
	PID    int
	Tenant int // the pid whose partition this is (default: PID)
	Flags  uint32
	Class  uint32 // ClassNone, ClassLS or ClassBE
	Tide   Tide   // an LS or BE tenant's policy (Policy.Apply); its Node and Floor are the parts'
	Comm   []string

	MemLimit uint64  // bytes of GPU memory the tenant may allocate (0: no limit)
	BW       BW      // its memory bandwidth share (Policy.Apply); its slots are the parts'
	Kernels  Kernels // its kernel table: its path (Policy.Apply), and the table for its compact file

	// Parts are the tenant's partitions, one a GPU (at most GPUs), its
	// first GPU's first. A part names its GPU by UUID where there are
	// several; a lone part that names none masks launches on any GPU.
	Parts []Part
}

// Part is a tenant's partition on one GPU: the GPU's UUID and node block
// (an LS or BE tenant's), the mask, the GPU's live TPCs, the partition's
// SMs and a BE tenant's floor TPCs, chosen for Policy.Floor. A block holds
// its first GPU's in its header (Snapshot's fields) and the others' in its
// table (More).
type Part struct {
	GPU   string       `json:"gpu"`
	Node  string       `json:"node,omitempty"`
	Mask  topo.Disable `json:"mask"`
	Live  topo.Enable  `json:"live"`
	SMs   int          `json:"sms"`
	Floor topo.Enable  `json:"floor"`
	// BWOff is where the tenant's bandwidth slot starts in each epoch on
	// this GPU (BW), which placement chooses apart from the slots of the
	// GPU's other tenants with a share.
	BWOff time.Duration `json:"bw_off,omitempty"`
}

// BW is what a block holds of a tenant's memory bandwidth share
// (Policy.BW): its launches run in a slot of each epoch Share x Epoch
// long (Len), starting at each part's BWOff; with Strict never outside
// it, else also outside it while no other tenant of the GPU with a share
// wants its own slot. Zero Share: no gate.
type BW struct {
	Share  float64       `json:"share"`
	Strict bool          `json:"strict,omitempty"`
	Epoch  time.Duration `json:"epoch,omitempty"`
	Len    time.Duration `json:"len,omitempty"`
}

// BWEpoch is CARVE_BW_EPOCH_NS: the epoch placement divides into the
// slots of a GPU's tenants with a bandwidth share. Short, so that a
// tenant waits at most about an epoch for its slot; long against a
// kernel, so that a slot holds several.
const BWEpoch = 2 * time.Millisecond

// BWSlot is the slot of a share of epoch: Share x epoch, to the
// microsecond.
func BWSlot(share float64, epoch time.Duration) time.Duration {
	return (time.Duration(share*float64(epoch)) + time.Microsecond/2).Truncate(time.Microsecond)
}

// Tide is what a block holds of an LS or BE tenant's policy (Policy.Apply
// writes it): for a BE tenant, launches in flight at most (0: no bound),
// the share of the time it may run while LS work is in flight and the
// period that share is counted over. Node names the GPU's node block in
// the runtime directory (NodeName of its UUID); carve records it for every
// partition, so that it also says which GPU a partition is on. Floor is
// how many TPCs the block's floor (Part.Floor) holds: read from it, never
// written.
type Tide struct {
	Node        string        `json:"node"`
	InflightMax int           `json:"inflight_max"`
	Queue       time.Duration `json:"queue"` // predicted GPU time in flight at most (0: no bound)
	Share       float64       `json:"share"`
	Epoch       time.Duration `json:"epoch"`
	Floor       int           `json:"floor"`          // TPCs
	Slice       time.Duration `json:"slice"`          // BE: pieces' length while an LS tenant is active (0: never cut)
	SLO         SLO           `json:"slo"`            // LS: the bound on its requests' estimated p99 (slo.Estimate; zero: none)
	Mark        string        `json:"mark,omitempty"` // LS: the NVTX range that marks a request (Policy.Mark; "": none)
}

// Create writes the block of in.PID into dir: filled under a temporary name,
// then renamed, so that no reader sees it half written. Its mode is
// BlockPerm(dir).
func Create(dir string, in Init) (*Handle, error) {
	return create(filepath.Join(dir, strconv.Itoa(in.PID)), filepath.Join(dir, fmt.Sprintf(".%d.new", in.PID)), BlockPerm(dir), in)
}

func create(path, tmp string, perm os.FileMode, in Init) (*Handle, error) {
	first, gpu, more, err := blockParts(in)
	if err != nil {
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	if err := checkKernelsPath(in.Kernels.Path); err != nil {
		return nil, fmt.Errorf("creating control block: kernel table: %w", err)
	}
	var kernels uint64
	if in.Kernels.Table != nil {
		if kernels, err = writeKernels(filepath.Dir(path), in.Kernels.Table, perm); err != nil {
			return nil, fmt.Errorf("creating control block: %w", err)
		}
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
	b.Mask, b.Live, b.SMs = first.Mask, first.Live, uint32(first.SMs)
	b.GPU = gpu
	copy(b.Comm[:len(b.Comm)-1], strings.Join(in.Comm, "\x00"))
	copy(b.Node[:len(b.Node)-1], first.Node)
	b.InflightMax, b.SharePPM, b.EpochNS = uint32(in.Tide.InflightMax), uint32(in.Tide.Share*1e6), uint64(in.Tide.Epoch)
	b.QueueUS = uint32(in.Tide.Queue.Microseconds())
	b.SliceUS = uint32(in.Tide.Slice.Microseconds())
	b.SLOUS, b.SLOAlone = uint32(in.Tide.SLO.Max.Microseconds()), uint32(math.Round(in.Tide.SLO.Alone*1000))
	copy(b.Mark[:len(b.Mark)-1], in.Tide.Mark)
	b.Floor = first.Floor
	b.MemLimit = in.MemLimit
	if in.BW.Share > 0 {
		epoch := cmp.Or(in.BW.Epoch, BWEpoch)
		b.BWPPM, b.BWEpochNS = uint32(math.Round(in.BW.Share*1e6)), uint64(epoch)
		b.BWLenNS = uint64(cmp.Or(in.BW.Len, BWSlot(in.BW.Share, epoch)))
		if in.BW.Strict {
			b.BWFlags = BWStrict
		}
		b.BWOffNS = uint64(first.BWOff)
	}
	b.More = more
	b.KernelsID = kernels
	copy(b.KernelsPath[:len(b.KernelsPath)-1], in.Kernels.Path)
	if err := os.Rename(tmp, path); err != nil {
		h.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("creating control block: %w", err)
	}
	return h, nil
}

// blockParts are in's first part, with its GPU's UUID, and the table of
// its other GPUs: each names its GPU, none twice, and where there are
// several the first names its own.
func blockParts(in Init) (first Part, gpu [16]byte, more [GPUs - 1]BlockPart, err error) {
	if in.Tide.Node != "" || in.Tide.Floor != 0 {
		return first, gpu, more, errors.New("a node block or floor named in Init.Tide: each part names its own")
	}
	if len(in.Parts) == 0 { // all TPCs of any GPU (a claim's account)
		return first, gpu, more, nil
	}
	if len(in.Parts) > GPUs {
		return first, gpu, more, fmt.Errorf("partitions on %d GPUs: a block holds at most %d", len(in.Parts), GPUs)
	}
	first = in.Parts[0]
	if first.GPU == "" && len(in.Parts) > 1 {
		return first, gpu, more, errors.New("a partition on several GPUs names each GPU, the first too")
	}
	if first.GPU != "" {
		if gpu, err = ParseUUID(first.GPU); err != nil {
			return first, gpu, more, err
		}
	}
	if len(first.Node) >= len(Block{}.Node) {
		return first, gpu, more, fmt.Errorf("node block name %q: longer than %d bytes", first.Node, len(Block{}.Node)-1)
	}
	seen := map[string]bool{FormatUUID(gpu): true}
	for i, p := range in.Parts[1:] {
		u, err := ParseUUID(p.GPU)
		if err != nil {
			return first, gpu, more, err
		}
		if seen[FormatUUID(u)] {
			return first, gpu, more, fmt.Errorf("GPU %s named twice", p.GPU)
		}
		seen[FormatUUID(u)] = true
		if len(p.Node) >= len(more[i].Node) {
			return first, gpu, more, fmt.Errorf("node block name %q: longer than %d bytes", p.Node, len(more[i].Node)-1)
		}
		more[i] = BlockPart{GPU: u, Mask: p.Mask, Live: p.Live, Floor: p.Floor, SMs: uint32(p.SMs), BWOffNS: uint64(p.BWOff)}
		copy(more[i].Node[:], p.Node)
	}
	return first, gpu, more, nil
}
