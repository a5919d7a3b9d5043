// carve set: a running process's partition or memory limit changed, and
// the topologies of the GPUs its block holds partitions on.

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/topo"
)

// topologiesOf finds the topologies of the GPUs pid's block holds
// partitions on, its first first (from the cache, by UUID and live TPC
// bits); with device (an ordinal, -1 none) that GPU's first, which must
// be one of them.
func topologiesOf(dir string, pid, device int) ([]*topo.Topology, error) {
	h, err := ctl.Open(dir, pid)
	if err != nil {
		return nil, err
	}
	s := h.Snapshot()
	err = h.Writable() // another user's tenant, in the node directory
	h.Close()
	if err != nil {
		return nil, err
	}
	var tops []*topo.Topology
	for _, p := range s.Parts() {
		t, err := topo.FindCachedGPU(p.GPU, p.Live)
		if err == nil && t == nil {
			err = fmt.Errorf("no cached topology matches its GPU %s: run 'carve topo'", p.GPU)
		}
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		tops = append(tops, t)
	}
	if device < 0 {
		return tops, nil
	}
	d, _, err := discover.Topology(device, false)
	if err != nil {
		return nil, err
	}
	for i, t := range tops {
		if place.SameGPU(t.UUID, d.UUID) {
			return append(append([]*topo.Topology{t}, tops[:i]...), tops[i+1:]...), nil
		}
	}
	return nil, fmt.Errorf("process %d has no partition on GPU %d (%s)", pid, device, d.UUID)
}

func newSetCmd() *cobra.Command {
	var spec specFlags
	var pid int
	var out string
	var mem ctl.MemLimit
	var noMem bool
	device := -1
	c := &cobra.Command{
		Use:   "set -p PID (-t TPCS | -g GPCS | -n COUNT) [--device N] [--mem SIZE|PCT]",
		Short: "Change the partition or memory limit of a running process",
		Long: `set moves a process started with 'carve run', with the child processes that
inherited its partition, to other TPCs. The change applies from each
process's next kernel launch; kernels already running keep their TPCs. The
update is atomic: a launch sees the old mask or the new one, never a mix.
As with run, the new TPCs may not overlap another partition without --share.
A tenant with partitions on several GPUs is moved on its first, or on
--device N; its partitions on the others stay.

Moving a running program to very few TPCs can stall it: libraries size some
kernels (persistent and split-K GEMMs) for the SMs the program saw at start,
and such kernels chosen on a whole H100 never finished on fewer than 8 TPCs;
set says so when it shrinks a program below that.

--mem changes the limit of GPU memory the process and its children may
allocate (--no-mem: none). A raise must fit the GPU's memory beside the
other tenants' limits, as run's does (--share over-commits it). Under MPS
the driver holds each process to the limit it started with for its life:
a limit can be lowered, not raised above that, nor taken off. A program
above a lowered limit keeps what it holds; its new allocations fail until
it is under.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if pid <= 0 {
				return errors.New("name the process with -p PID")
			}
			memory := cmd.Flags().Changed("mem") || noMem
			s, err := spec.parse()
			move := err == nil
			if errors.Is(err, errUnnamed) && memory {
				err = nil
			}
			switch {
			case err != nil:
				return err
			case move && memory && out == "json":
				return errors.New("with -o json, change the TPCs or the memory limit, not both")
			case noMem && mem != (ctl.MemLimit{}):
				return errors.New("--mem and --no-mem exclude each other")
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			tops, err := topologiesOf(dir, pid, device)
			if err != nil {
				return err
			}
			t := tops[0]
			if memory {
				if err := setMemory(cmd, dir, tops, pid, mem, spec.share, out); err != nil || !move {
					return err
				}
			}
			m, err := place.Move(dir, t, pid, s, spec.share)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"pid": pid, "pids": m.PIDs, "before": m.Before.String(),
					"after": m.After.String(), "tpcs": len(m.After), "generation": m.Generation})
			}
			for _, o := range m.Overlaps {
				note(cmd, "%s; they are shared", o)
			}
			if len(m.After) < ctl.NarrowMin && len(m.After) < len(m.Before) {
				note(cmd, "libraries size some kernels for the TPCs a program started with; on an H100, PyTorch's "+
					"kernels sized for the whole GPU never finished on fewer than %d TPCs", ctl.NarrowMin)
			}
			also := ""
			if n := len(m.PIDs) - 1; n > 0 {
				also = fmt.Sprintf(" and %d process(es) of its partition", n)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pid %d%s: TPCs %s -> %s (%d of %d), from its next kernel launch\n",
				pid, also, m.Before, m.After, len(m.After), len(t.TPCs))
			return nil
		},
	}
	c.Flags().IntVarP(&pid, "pid", "p", 0, "process to change")
	spec.add(c)
	c.Flags().Var(&mem, "mem", memUsage)
	c.Flags().BoolVar(&noMem, "no-mem", false, "take the memory limit off (not under MPS)")
	c.Flags().IntVar(&device, "device", -1, "the GPU, by ordinal, whose partition to change (default: the process's first)")
	addOutputFlag(c, &out)
	return c
}
