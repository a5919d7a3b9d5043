// What a tenant's memory limit counts against its GPU's memory
// (MemCharge), and the check, under the placement lock, that it fits
// beside the limits of the GPU's other tenants and claims.

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
	var held, outside uint64 // outside: of the holders Outside, which no share over-commits
	var who []string
	for _, h := range holders {
		if h.Claim == "" && h.Tenant == tenant && !h.Outside {
			continue
		}
		if h.Mem == 0 {
			m.Unlimited++
			continue
		}
		held += h.Charge()
		if h.Outside {
			outside += h.Charge()
		}
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
	case share && (total == 0 || need <= total-min(outside, total)):
		m.Over = need - m.Free
		return m, nil
	case share:
		return m, fmt.Errorf("%w: a limit of %s asked for, and %s of the GPU's %s are held by limits that --share does not over-commit (%s)",
			ErrMemory, ctl.FormatBytes(need), ctl.FormatBytes(outside), ctl.FormatBytes(total), strings.Join(who, "; "))
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
