// carve mps start: starts carve's MPS daemon.

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/mps"
)

func newMPSStartCmd() *cobra.Command {
	return &cobra.Command{
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
	}
}
