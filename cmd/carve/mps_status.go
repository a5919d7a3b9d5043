// carve mps status: whether carve's MPS daemon runs, and answers.

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/mps"
)

func newMPSStatusCmd() *cobra.Command {
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
	return status
}
