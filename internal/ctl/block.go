// The control block's layout: the values shared with shim/carve_ctl.h,
// the tenant classes as people write them, and Block and BlockPart, the
// mirrors of struct carve_ctl and struct carve_gpu_part, which
// TestLayoutMatchesHeader checks against the header.

package ctl

import (
	"fmt"
	"unsafe"
)

// Values shared with shim/carve_ctl.h.
const (
	Magic   = 0x45565243
	Version = 8
	Size    = 6144
	GPUs    = 16 // GPUs a block holds partitions on: the header's, and GPUs-1 in its table

	StateNew               = 0
	StateHooked            = 1
	StateUnhooked          = 2
	StateNoDriver          = 3
	FlagAllowUnpartitioned = 1
	FlagAllSMs             = 2
	FlagMPS                = 4
	FlagLSOwn              = 8
	BWStrict               = 1 // bw_flags: never outside its slot

	ClassNone = 0
	ClassLS   = 1
	ClassBE   = 2

	TideOff  = 0
	TideIdle = 1
	TideBusy = 2
	TideHeld = 3

	MarkOff      = 0 // mark_state: no mark, or not looked yet
	MarkWaiting  = 1 // NVTX_INJECTION64_PATH names the shim; no NVTX call yet
	MarkAttached = 2 // NVTX hands the shim its ranges
	MarkOther    = 3 // NVTX_INJECTION64_PATH names another tool: no range is seen
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
	Magic        uint32    `c:"magic"`
	Version      uint16    `c:"version"`
	Size         uint16    `c:"size"`
	PID          uint32    `c:"pid"`
	Flags        uint32    `c:"flags"`
	StartTicks   uint64    `c:"start_ticks"`
	CreatedNS    uint64    `c:"created_ns"`
	Gen          uint64    `c:"gen"`
	Mask         [4]uint32 `c:"mask"`
	Live         [4]uint32 `c:"live"`
	State        uint32    `c:"state"`
	TMDVersion   uint32    `c:"tmd_version"`
	Launches     uint64    `c:"launches"`
	LastLaunchNS uint64    `c:"last_launch_ns"`
	Refused      uint64    `c:"refused"`
	AppliedGen   uint64    `c:"applied_gen"`
	TenantClass  uint32    `c:"tenant_class"`
	Pad0         uint32    `c:"pad0"`
	PauseUntilNS uint64    `c:"pause_until_ns"` // BE: held, LS busy or not, until this CLOCK_MONOTONIC time (the SLO controller's calibration, or its hold from the bottom of the share)
	Tenant       uint32    `c:"tenant"`
	SMs          uint32    `c:"sms"`
	Fault        uint32    `c:"fault"`
	FaultClaim   uint32    `c:"fault_claim"`
	FaultNS      uint64    `c:"fault_ns"`
	FaultCall    [32]byte  `c:"fault_call"`
	GPU          [16]byte  `c:"gpu"`
	OtherLaunch  uint64    `c:"other_launches"`
	OtherGPU     [16]byte  `c:"other_gpu"`
	GraphRemade  uint64    `c:"graph_remade"`
	GraphKept    uint64    `c:"graph_kept"`
	Comm         [256]byte `c:"comm"`
	InflightMax  uint32    `c:"inflight_max"`
	SharePPM     uint32    `c:"share_ppm"`
	EpochNS      uint64    `c:"epoch_ns"`
	Node         [64]byte  `c:"node"`
	TideState    uint32    `c:"tide_state"`
	Inflight     uint32    `c:"inflight"`
	HeldNS       uint64    `c:"held_ns"`
	HeldLaunches uint64    `c:"held_launches"`
	NarrowLaunch uint64    `c:"narrow_launches"`
	BusyNS       uint64    `c:"busy_ns"`
	Requests     uint64    `c:"requests"`
	QueueUS      uint32    `c:"queue_us"`
	KernelUS     uint32    `c:"kernel_us"`
	Floor        [4]uint32 `c:"floor"`
	MemLimit     uint64    `c:"mem_limit"`
	MemUsed      uint64    `c:"mem_used"`
	MemTotal     uint64    `c:"mem_total"`
	MemPeak      uint64    `c:"mem_peak"`
	MemRefused   uint64    `c:"mem_refused"`
	MemRefusedNS uint64    `c:"mem_refused_ns"`
	SliceUS      uint32    `c:"slice_us"`
	SliceFns     uint32    `c:"slice_fns"`
	Sliced       uint64    `c:"sliced"`
	SlicePieces  uint64    `c:"slice_pieces"`
	SLOUS        uint32    `c:"slo_us"`
	SLOAlone     uint32    `c:"slo_alone_milli"`
	SLOSteered   uint32    `c:"slo_steered"`
	AskedShare   uint32    `c:"asked_share_ppm"`
	AskedQueueUS uint32    `c:"asked_queue_us"`
	SLOTarget    uint32    `c:"slo_target_us"`
	BWPPM        uint32    `c:"bw_ppm"`
	BWFlags      uint32    `c:"bw_flags"`
	BWOffNS      uint64    `c:"bw_off_ns"`
	BWLenNS      uint64    `c:"bw_len_ns"`
	BWEpochNS    uint64    `c:"bw_epoch_ns"`
	BWWantNS     uint64    `c:"bw_want_ns"`
	BWHeldNS     uint64    `c:"bw_held_ns"`
	BWHeldLaunch uint64    `c:"bw_held_launches"`
	BWBusyNS     uint64    `c:"bw_busy_ns"`
	KernelsID    uint64    `c:"kernels_id"`
	KernelsPath  [128]byte `c:"kernels"`
	KernelBytes  uint64    `c:"kernel_bytes"`
	KernelUnkn   uint64    `c:"kernel_unknown"`
	KernelBeside uint64    `c:"kernel_beside"`
	TideReserved [7]uint64 `c:"tide_reserved"`

	More         [GPUs - 1]BlockPart `c:"more"`
	MoreReserved [128]byte           `c:"more_reserved"`

	BusyHist  BlockHist `c:"busy_hist"`
	AloneHist BlockHist `c:"alone_hist"`

	MarkHist     BlockHist  `c:"mark_hist"`
	MarkDropped  uint64     `c:"mark_dropped"`
	MarkState    uint32     `c:"mark_state"`
	MarkPad      uint32     `c:"mark_pad"`
	Mark         [64]byte   `c:"mark"`
	MarkReserved [47]uint64 `c:"mark_reserved"`
}

// BlockHist mirrors struct carve_hist: an LS tenant's busy periods, by
// bucket (HistBound), and their total time.
type BlockHist struct {
	SumNS  uint64              `c:"sum_ns"`
	Bucket [HistBuckets]uint64 `c:"bucket"`
}

// BlockPart mirrors struct carve_gpu_part: the partition on one more GPU
// of the tenant, as the block's header holds that of its first.
type BlockPart struct {
	GPU     [16]byte  `c:"gpu"`
	Mask    [4]uint32 `c:"mask"`
	Live    [4]uint32 `c:"live"`
	Floor   [4]uint32 `c:"floor"`
	SMs     uint32    `c:"sms"`
	Pad     uint32    `c:"pad"`
	Node    [48]byte  `c:"node"`
	BWOffNS uint64    `c:"bw_off_ns"` // this GPU's bandwidth slot's start in the epoch
}

var _ [Size - unsafe.Sizeof(Block{})]byte // Block is exactly Size bytes
var _ [unsafe.Sizeof(Block{}) - Size]byte
var _ [unsafe.Offsetof(Block{}.More) - 1024]byte // the table follows the first 1024 bytes
var _ [1024 - unsafe.Offsetof(Block{}.More)]byte
