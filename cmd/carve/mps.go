package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/mps"
)

func newMPSCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mps",
		Short: "Start, stop or inspect carve's MPS daemon",
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
	var out string
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether carve's MPS daemon runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			d := mps.Default()
			st := map[string]any{"running": d.Running(), "pid": d.PID(), "pipe_dir": d.PipeDir(), "log_dir": d.LogDir()}
			var qerr error
			if d.Running() {
				var servers string
				if servers, qerr = d.Query("get_server_list"); qerr == nil {
					st["servers"] = servers
				} else {
					st["error"] = qerr.Error()
				}
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			switch {
			case !d.Running():
				fmt.Fprintf(cmd.OutOrStdout(), "MPS is not running (pipe directory %s)\n", d.PipeDir())
			case qerr != nil:
				fmt.Fprintf(cmd.OutOrStdout(), "MPS runs (control daemon pid %d, pipe directory %s) but does not answer, so its clients cannot connect: %v\n"+
					"Once none runs, stop it (carve mps stop, or kill %d) and start it again.\n", d.PID(), d.PipeDir(), qerr, d.PID())
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "MPS runs: control daemon pid %d, pipe directory %s, servers [%v]\n",
					d.PID(), d.PipeDir(), st["servers"])
			}
			return nil
		},
	}
	addOutputFlag(status, &out)
	c.AddCommand(&cobra.Command{
		Use:   "start",
		Short: "Start carve's MPS daemon",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := mps.Default()
			if err := d.Start(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "MPS started (pid %d, pipe directory %s)\n", d.PID(), d.PipeDir())
			return nil
		},
	}, &cobra.Command{
		Use:   "stop",
		Short: "Stop carve's MPS daemon",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := mps.Default().Stop(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "MPS stopped")
			return nil
		},
	}, status)
	return c
}
