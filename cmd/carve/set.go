package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// openWithTopology maps pid's control block and finds the topology of the
// GPU it was made for (from the cache, by its live TPC bits).
func openWithTopology(dir string, pid int) (*ctl.Handle, *topo.Topology, error) {
	h, err := ctl.Open(dir, pid)
	if err != nil {
		return nil, nil, err
	}
	s := h.Snapshot()
	if !s.Alive() {
		h.Close()
		return nil, nil, fmt.Errorf("process %d has exited", pid)
	}
	t, err := topo.FindCached(topo.Mask(s.Live))
	if err == nil && t == nil {
		err = errors.New("no cached topology matches its GPU: run 'carve topo'")
	}
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("process %d: %w", pid, err)
	}
	return h, t, nil
}

func newSetCmd() *cobra.Command {
	var spec specFlags
	var pid int
	var out string
	c := &cobra.Command{
		Use:   "set -p PID (-t TPCS | -g GPCS | -n COUNT)",
		Short: "Change the partition of a running process",
		Long: `set moves a process started with 'carve run' (or a child of one) to other TPCs.
The change applies from the process's next kernel launch; kernels already
running keep their TPCs. The update is atomic: a launch sees the old mask or
the new one, never a mix.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if pid <= 0 {
				return errors.New("name the process with -p PID")
			}
			s, err := spec.parse()
			if err != nil {
				return err
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			h, t, err := openWithTopology(dir, pid)
			if err != nil {
				return err
			}
			defer h.Close()
			set, mask, others, err := place(s, t, dir, pid)
			if err != nil {
				return err
			}
			before := partition.FromMask(t, topo.Mask(h.Snapshot().Mask))
			gen, err := h.SetMask(mask)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"pid": pid, "before": before.String(), "after": set.String(), "tpcs": len(set), "generation": gen})
			}
			warnOverlaps(cmd.ErrOrStderr(), set, others)
			fmt.Fprintf(cmd.OutOrStdout(), "pid %d: TPCs %s -> %s (%d of %d), from its next kernel launch\n",
				pid, before, set, len(set), len(t.TPCs))
			return nil
		},
	}
	c.Flags().IntVarP(&pid, "pid", "p", 0, "process to change")
	spec.add(c)
	addOutputFlag(c, &out)
	return c
}
