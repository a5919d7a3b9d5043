// Changing a running tenant's memory limit (carve set --mem): SetMemory
// rewrites it in each of its processes' blocks, a raise only where it
// fits, and under MPS never above the limit the driver holds it to.

package place

import (
	"fmt"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
)

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
	unlock, err := lock(dir)
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
	if err := fresh(dir, l.recs); err != nil {
		return nil, err
	}
	c := &MemChanged{After: limit}
	var mine []ctl.Entry
	var at []int // mine's places in l.blocks
	for i, e := range l.blocks {
		if e.Tenant == snap.Tenant && OnGPU(e.Snapshot, t) {
			mine, at = append(mine, e), append(at, i)
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
	if !lower && !ctl.WritesNodes(dir) {
		// other users count root's record of the limit, which only root's
		// fence that knows the GPU's memory raises (ctl.RecordTenants)
		return nil, fmt.Errorf("in the node directory %s only root raises a memory limit (sudo carve set --mem), "+
			"so that every user's placements count it: other users would count %s while process %d allocated more",
			dir, ctl.FormatBytes(c.Before), pid)
	}
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
	for j, e := range mine {
		b, err := ctl.Open(dir, e.PID)
		if err != nil {
			continue // ended since the listing
		}
		err = b.SetMemLimit(limit)
		if err == nil {
			l.blocks[at[j]].Snapshot = b.Snapshot()
			touch(dir, b.Path)
		}
		b.Close()
		if err != nil {
			return nil, err
		}
		c.PIDs = append(c.PIDs, e.PID)
	}
	// root's record takes the change now, the GPUs' memory known
	l.others, l.raise = viewOf(dir, false).tenants(), true
	fence(dir, l, append([]*topo.Topology{t}, more...)...)
	return c, nil
}
