// carve mps: the group of commands that start, stop and inspect carve's MPS
// daemon.

package main

import "github.com/spf13/cobra"

func newMPSCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mps",
		Short: "Start, stop, inspect or touch carve's MPS daemon",
		Long: `MPS lets separate processes' kernels run on the GPU at the same time; carve's
partitions then keep them on disjoint TPCs. carve runs its own MPS control
daemon in its own pipe directory ($CARVE_MPS_DIR, default /tmp/carve-mps-UID),
leaving any other MPS setup alone. Clients get CUDA_DEVICE_MAX_CONNECTIONS=8.
One daemon serves every GPU it sees (start it without CUDA_VISIBLE_DEVICES), so
that a process partitioned on several GPUs is one client; after a fatal fault
on one GPU, clients of the others run on, but the server takes no new client
until those of the faulted GPU have exited.

Known MPS limits carve does not hide: a fatal GPU fault in one client ends the
others' work too; one server serves a limited number of clients (about 15 with
8 connections each); %smid is virtualized per client.`,
	}
	c.AddCommand(newMPSStartCmd(), newMPSStopCmd(), newMPSStatusCmd(), newMPSTouchCmd())
	return c
}
