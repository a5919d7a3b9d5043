package place

import (
	"errors"
	"fmt"
	"strings"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
)

// ContextReserve is what placement counts, beside a tenant's memory limit,
// for its CUDA context where the limit does not hold it: outside MPS the
// shim's account holds only what the tenant allocates, while under MPS the
// driver's limit (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) counts the context in.
// Measured on the H100 (results/h100-580.159.04-2026-11-24/memory): a
// PyTorch context with cuBLAS loaded took 719 MiB of the GPU outside MPS
// (801 MiB as an MPS client), and a BE under MPS with a 20 GiB limit got
// 19,712 MiB of allocations, 768 MiB less.
const ContextReserve = 768 << 20

// ErrMemory is wrapped by the errors of placements refused because the
// limits of the GPU's tenants would exceed its memory.
var ErrMemory = errors.New("the GPU's memory would be over-committed")

// MemCharge is what a tenant with the given memory limit (0: none) counts
// against the GPU's memory: its limit, and ContextReserve for its context
// where it runs outside MPS. A tenant without a limit counts nothing: it
// is guaranteed nothing, and may take what limited tenants do not hold
// yet.
func MemCharge(limit uint64, mps bool) uint64 {
	if limit == 0 || mps {
		return limit
	}
	return limit + ContextReserve
}

// Charge is what the holder counts against the GPU's memory (MemCharge).
func (h Holder) Charge() uint64 { return MemCharge(h.Mem, h.MPS) }

// Memory is how a placement stands with the GPU's memory.
type Memory struct {
	Limit     uint64 // the tenant's limit, resolved (0: none)
	Free      uint64 // what the GPU has beside the other limited tenants' charges
	Over      uint64 // with Share: how far the charges now exceed the GPU's memory
	Unlimited int    // other tenants of the GPU without a limit
}

// fitMemory checks that a tenant's limit (bytes, 0: none), counted as
// MemCharge, fits t's memory beside the holders other than tenant (a
// claim: all), unless share allows over-committing it.
func fitMemory(t *topo.Topology, holders []Holder, tenant int, limit uint64, mps, share bool, advice string) (Memory, error) {
	m := Memory{Limit: limit}
	var held uint64
	var who []string
	for _, h := range holders {
		if h.Claim == "" && h.Tenant == tenant {
			continue
		}
		if h.Mem == 0 {
			m.Unlimited++
			continue
		}
		held += h.Charge()
		who = append(who, fmt.Sprintf("%s holds %s", h, ctl.FormatBytes(h.Charge())))
	}
	total := t.MemoryBytes
	if total > held {
		m.Free = total - held
	}
	need := MemCharge(limit, mps)
	switch {
	case limit == 0:
		return m, nil
	case total == 0 && !share:
		return m, ctl.ErrMemUnknown
	case need <= m.Free:
		return m, nil
	case share:
		m.Over = need - m.Free
		return m, nil
	}
	ctx := ""
	if need != limit {
		ctx = fmt.Sprintf(" (%s with its context, outside MPS)", ctl.FormatBytes(need))
	}
	return m, fmt.Errorf("%w: a limit of %s asked for%s, %s of the GPU's %s are free of other tenants' limits (%s); %s",
		ErrMemory, ctl.FormatBytes(limit), ctx, ctl.FormatBytes(m.Free), ctl.FormatBytes(total), strings.Join(who, "; "), advice)
}

// memAdvice is what the error of a limit that does not fit says to do.
func (r Request) memAdvice() string {
	if r.Claim != nil {
		return "the scheduler counts more free memory on this GPU than the node has: do tenants of carve run hold limits outside Kubernetes?"
	}
	return "ask for less, or add --share to over-commit it"
}

// MemChanged is what SetMemory changed.
type MemChanged struct {
	Before, After uint64 // the limit (0: none)
	Used          uint64 // what the tenant's processes hold now
	PIDs          []int  // the tenant's processes whose blocks were changed
	Memory
}

// Backstop reports the limit the driver holds a process of carve's MPS to
// for its life, as it started with it (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT),
// if it has one: mps.StartedLimit.
type Backstop func(pid int) (bytes uint64, ok bool, err error)

// SetMemory gives the tenant of pid (its process and the child processes
// that copied its block) the memory limit lim on t, under dir's lock: a
// raise must fit the GPU's memory beside the other tenants' limits unless
// share allows over-committing it, and so on each of more, the tenant's
// other GPUs (where it may hold all of its limit too). Under MPS the driver holds each process
// to the limit it started with (backstop), so a limit above that, or none,
// is refused; a lower one is not, and the shim then refuses the tenant's
// allocations until it is under it.
func SetMemory(dir string, t *topo.Topology, pid int, lim ctl.MemLimit, share bool, backstop Backstop, more ...*topo.Topology) (*MemChanged, error) {
	limit, err := lim.Resolve(t.MemoryBytes)
	if err != nil {
		return nil, err
	}
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := running(dir, pid)
	if err != nil {
		return nil, err
	}
	if !OnGPU(snap, t) {
		return nil, fmt.Errorf("process %d runs on another GPU than the topology given", pid)
	}
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	c := &MemChanged{After: limit}
	var mine []ctl.Entry
	for _, e := range l.blocks {
		if e.Tenant == snap.Tenant && OnGPU(e.Snapshot, t) {
			mine = append(mine, e)
		}
	}
	for _, e := range mine {
		if e.PID == e.Tenant || c.Before == 0 {
			c.Before, c.Used = e.Memory.Limit, e.Memory.Total
		}
		if e.Flags&ctl.FlagMPS == 0 || backstop == nil {
			continue
		}
		started, ok, err := backstop(e.PID)
		if err != nil {
			return nil, fmt.Errorf("the MPS memory limit process %d started with: %w", e.PID, err)
		}
		if ok && (limit == 0 || limit > started) {
			return nil, fmt.Errorf("process %d started under MPS with a memory limit of %s (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), "+
				"which the driver holds it to for its life: a running process's limit can be lowered, not raised above that; "+
				"start it again with the larger --mem", e.PID, ctl.FormatBytes(started))
		}
	}
	mps := snap.Flags&ctl.FlagMPS != 0
	lower := limit > 0 && c.Before > 0 && limit <= c.Before // always allowed
	if c.Memory, err = fitMemory(t, l.holders(t), snap.Tenant, limit, mps, share || lower, "ask for less, or add --share to over-commit it"); err != nil {
		return nil, err
	}
	for _, o := range more {
		if !OnGPU(snap, o) {
			continue
		}
		if _, err := fitMemory(o, l.holders(o), snap.Tenant, limit, mps, share || lower, "ask for less, or add --share to over-commit it"); err != nil {
			return nil, fmt.Errorf("GPU %s: %w", o.UUID, err)
		}
	}
	for _, e := range mine {
		b, err := ctl.Open(dir, e.PID)
		if err != nil {
			continue // ended since the listing
		}
		err = b.SetMemLimit(limit)
		b.Close()
		if err != nil {
			return nil, err
		}
		c.PIDs = append(c.PIDs, e.PID)
	}
	return c, nil
}
