// What carve run and carve set say of a tenant's memory limit, and carve
// set --mem's change of it.

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/topo"
)

// memText is what run and set say of a tenant's memory limit after its
// TPCs.
func memText(m place.Memory) string {
	if m.Limit == 0 {
		return ""
	}
	return ", memory limit " + ctl.FormatBytes(m.Limit)
}

// memNotes says what a tenant with a memory limit should know: that the
// limits now over-commit the GPU's memory, that tenants without a limit
// share it, that under MPS its context takes from the limit.
func memNotes(cmd *cobra.Command, m place.Memory, mps bool) {
	if m.Limit == 0 {
		return
	}
	if m.Over > 0 {
		note(cmd, "the GPU's memory is over-committed by %s: its tenants' limits add up to more than it has", ctl.FormatBytes(m.Over))
	}
	if m.Unlimited > 0 {
		note(cmd, "%d tenant(s) without a memory limit share this GPU: they may take memory this one has not allocated yet", m.Unlimited)
	}
	if mps && m.Limit <= place.ContextReserve {
		note(cmd, "under MPS the limit holds the program's CUDA context too (about %s), which leaves it little or nothing to allocate",
			ctl.FormatBytes(place.ContextReserve))
	}
}

// setMemory is carve set --mem: the tenant of pid gets the limit lim (none:
// no limit), and set says what changed.
func setMemory(cmd *cobra.Command, dir string, tops []*topo.Topology, pid int, lim ctl.MemLimit, share bool, out string) error {
	c, err := place.SetMemory(dir, tops[0], pid, lim, share, mps.StartedLimit, tops[1:]...)
	if err != nil {
		return err
	}
	if out == "json" {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"pid": pid, "pids": c.PIDs, "memory_limit_before": c.Before,
			"memory_limit": c.After, "memory_used": c.Used})
	}
	if c.After > 0 && c.Used > c.After {
		note(cmd, "it holds %s: its new allocations fail until it is under %s", ctl.FormatBytes(c.Used), ctl.FormatBytes(c.After))
	}
	memNotes(cmd, c.Memory, false)
	also := ""
	if n := len(c.PIDs) - 1; n > 0 {
		also = fmt.Sprintf(" and %d process(es) of its tenant", n)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "pid %d%s: memory limit %s -> %s, from its next allocation\n",
		pid, also, limitText(c.Before), limitText(c.After))
	return nil
}

// limitText is a memory limit for people: "none" for none.
func limitText(b uint64) string {
	if b == 0 {
		return "none"
	}
	return ctl.FormatBytes(b)
}
