// carve mps stop: stops carve's MPS daemon.

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/mps"
)

func newMPSStopCmd() *cobra.Command {
	return &cobra.Command{
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
	}
}
