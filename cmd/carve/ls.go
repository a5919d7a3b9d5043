// carve ls: the partitioned processes, one row each.

package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/status"
	"github.com/carve-gpu/carve/internal/xid"
)

func newLsCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "ls",
		Short: "List partitioned processes",
		Long: `ls lists the running processes that carve partitions (this user's): pid,
its GPU (the first group of its UUID) and logical TPCs there, the SM count
the program is told (a tenant with partitions on several GPUs has a line
for each of the others below, and -o json a list of them, gpus), the GPU memory its tenant
holds and its limit (MEM, used/limit; -o json has the bytes), whether it is
a client of MPS or has a context of its own, kernel launches so far and the
time of the last one, and its state. A tenant whose allocations were
refused at its memory limit says so in its state.

A process whose driver calls failed with a GPU fault (an illegal address, a
failed launch, its MPS server gone) says so; processes that ended after one
are listed below for an hour. Under MPS a fault in one client ends the work
of every client of the same server: clients that met a fault together are
listed as one group, and where the kernel log can be read (root, or
kernel.dmesg_restrict=0) the driver's Xid report says whose kernel faulted.
A program run with --no-mps is outside that group's reach. Entries of
processes that exited otherwise are removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			events, unreadable := xid.Read()
			rows, err := status.List(dir, events)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			status.WriteTable(cmd.OutOrStdout(), rows, time.Now(), unreadable)
			return nil
		},
	}
	addOutputFlag(c, &out)
	return c
}
