// Reading a control block: Snapshot, a consistent copy of its fields,
// with what it says of the tenant's partitions, tide work and memory.

package ctl

import (
	"bytes"
	"strings"
	"sync/atomic"
	"time"

	"github.com/carve-gpu/carve/internal/topo"
)

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
	Floor      topo.Enable   // a BE tenant's floor TPCs
	BWOff      time.Duration // where its bandwidth slot starts in the epoch on its first GPU
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
	BW         BW // its bandwidth share (zero: none); each part's slot is its BWOff
	BWStatus   BWStatus
	// Kernels is the path of its kernel table as named ("": none), and
	// KernelsID its compact file's id (KernelsFile; 0: none)
	Kernels      string
	KernelsID    uint64
	KernelStatus KernelStatus
	// Steered is what a BE tenant asked of its share and queue while the
	// SLO controller (internal/slo) holds them (Tide has the values it
	// set); nil while it does not.
	Steered *Asked

	// launches on another GPU than the mask's, which ran on all its TPCs
	// (allowed unpartitioned), and the last such GPU's UUID
	OtherLaunches uint64
	OtherGPU      string

	// executable graphs launched after their GPU's mask moved: instantiated
	// anew on the new mask, or run on the one they were instantiated under
	// (their kind, or a failure); each counted once a move
	GraphsRemade, GraphsKept uint64

	// More are the partitions on the tenant's other GPUs (the fields
	// above are its first's), masks and SM counts read with Mask.
	More []Part
}

// Parts are the partitions on each of the tenant's GPUs: its first, then
// More.
func (s Snapshot) Parts() []Part {
	first := Part{GPU: s.GPU, Node: s.Tide.Node, Mask: s.Mask, Live: s.Live, SMs: s.SMs, Floor: s.Floor, BWOff: s.BWOff}
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

// Asked is what a BE tenant asked of the dials the SLO controller sets.
type Asked struct {
	Share float64
	Queue time.Duration
}

// BWStatus is what the shim of a tenant with a bandwidth share says of
// its gate (shim/bw.c).
type BWStatus struct {
	Held         time.Duration `json:"held"`          // time launches waited for its slot
	HeldLaunches uint64        `json:"held_launches"` // launches that waited
	// Busy: its kernels' time on the GPU, as the gate measured it while it
	// gated (a tenant not strict with no other share on its GPU runs
	// ungated, unmeasured)
	Busy time.Duration `json:"busy"`
	// Want: CLOCK_MONOTONIC time (Mono) until which it wants its slot
	Want time.Duration `json:"want,omitempty"`
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
	// LS: the target the SLO controller holds its estimate under now (a
	// multiple's, of its calibration); 0 for none yet
	SLOTarget time.Duration `json:"slo_target,omitempty"`
	// BE: held until this CLOCK_MONOTONIC time (Mono) while the SLO
	// controller calibrates an LS tenant, or holds one over its goal with
	// the BE at the bottom of its share (Handle.Pause); 0 for none
	PauseUntil time.Duration `json:"pause_until,omitempty"`
	// LS: its busy periods, all of them and those alone (no BE launch on
	// the GPU from a second before to the end: carve_ctl.h's alone_hist)
	Periods Hist `json:"-"`
	Alone   Hist `json:"-"`
	// LS with a mark (Tide.Mark): the ranges its program marked as
	// requests (shim/nvtx.c), their length from start to end; those it
	// could not time (nested too deep, or too many open at once); and
	// where it stands with NVTX (MarkOff, MarkWaiting, MarkAttached or
	// MarkOther)
	Marked      Hist   `json:"-"`
	MarkDropped uint64 `json:"mark_dropped,omitempty"`
	MarkState   uint32 `json:"mark_state,omitempty"`
}

// Paused says whether t's pause (PauseUntil) lasts now, on Mono.
func (t TideStatus) Paused() bool { return t.PauseUntil > Mono() }

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
			part := Part{GPU: FormatUUID(p.GPU), Node: string(node), Live: p.Live, Floor: p.Floor, SMs: int(atomic.LoadUint32(&p.SMs)),
				BWOff: time.Duration(p.BWOffNS)}
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
	s.GraphsRemade = atomic.LoadUint64(&b.GraphRemade)
	s.GraphsKept = atomic.LoadUint64(&b.GraphKept)
	if s.OtherLaunches = atomic.LoadUint64(&b.OtherLaunch); s.OtherLaunches > 0 {
		s.OtherGPU = FormatUUID(b.OtherGPU)
	}
	comm := bytes.TrimRight(b.Comm[:], "\x00")
	if len(comm) > 0 {
		s.Command = strings.Split(string(comm), "\x00")
	}
	node, _, _ := bytes.Cut(b.Node[:], []byte{0})
	mark, _, _ := bytes.Cut(b.Mark[:], []byte{0}) // written once, before the block is published
	s.Tide = Tide{Node: string(node), InflightMax: int(atomic.LoadUint32(&b.InflightMax)),
		Queue: time.Duration(atomic.LoadUint32(&b.QueueUS)) * time.Microsecond,
		Share: float64(atomic.LoadUint32(&b.SharePPM)) / 1e6, Epoch: time.Duration(atomic.LoadUint64(&b.EpochNS)),
		Slice: time.Duration(atomic.LoadUint32(&b.SliceUS)) * time.Microsecond,
		SLO:   SLO{Max: time.Duration(atomic.LoadUint32(&b.SLOUS)) * time.Microsecond, Alone: float64(atomic.LoadUint32(&b.SLOAlone)) / 1000},
		Mark:  string(mark)}
	if atomic.LoadUint32(&b.SLOSteered) != 0 {
		s.Steered = &Asked{Share: float64(atomic.LoadUint32(&b.AskedShare)) / 1e6,
			Queue: time.Duration(atomic.LoadUint32(&b.AskedQueueUS)) * time.Microsecond}
	}
	s.Floor = b.Floor // written once, before the block is published
	s.Tide.Floor = s.Floor.Count()
	s.TideStatus = TideStatus{State: atomic.LoadUint32(&b.TideState), Inflight: int(atomic.LoadUint32(&b.Inflight)),
		Held: time.Duration(atomic.LoadUint64(&b.HeldNS)), HeldLaunches: atomic.LoadUint64(&b.HeldLaunches),
		NarrowLaunch: atomic.LoadUint64(&b.NarrowLaunch), Busy: time.Duration(atomic.LoadUint64(&b.BusyNS)),
		Requests: atomic.LoadUint64(&b.Requests), Kernel: time.Duration(atomic.LoadUint32(&b.KernelUS)) * time.Microsecond,
		Sliced: atomic.LoadUint64(&b.Sliced), SlicePieces: atomic.LoadUint64(&b.SlicePieces),
		SLOTarget:  time.Duration(atomic.LoadUint32(&b.SLOTarget)) * time.Microsecond,
		PauseUntil: time.Duration(atomic.LoadUint64(&b.PauseUntilNS)),
		Periods:    b.BusyHist.read(), Alone: b.AloneHist.read(),
		Marked: b.MarkHist.read(), MarkDropped: atomic.LoadUint64(&b.MarkDropped), MarkState: atomic.LoadUint32(&b.MarkState)}
	if ppm := atomic.LoadUint32(&b.BWPPM); ppm != 0 { // written once, before the block is published
		s.BW = BW{Share: float64(ppm) / 1e6, Strict: b.BWFlags&BWStrict != 0, Epoch: time.Duration(b.BWEpochNS), Len: time.Duration(b.BWLenNS)}
		s.BWOff = time.Duration(b.BWOffNS)
	}
	s.BWStatus = BWStatus{Held: time.Duration(atomic.LoadUint64(&b.BWHeldNS)), HeldLaunches: atomic.LoadUint64(&b.BWHeldLaunch),
		Busy: time.Duration(atomic.LoadUint64(&b.BWBusyNS)), Want: time.Duration(atomic.LoadUint64(&b.BWWantNS))}
	kpath, _, _ := bytes.Cut(b.KernelsPath[:], []byte{0}) // written once, before the block is published
	s.Kernels, s.KernelsID = string(kpath), b.KernelsID
	s.KernelStatus = KernelStatus{Bytes: atomic.LoadUint64(&b.KernelBytes), Unknown: atomic.LoadUint64(&b.KernelUnkn),
		Beside: atomic.LoadUint64(&b.KernelBeside)}
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
