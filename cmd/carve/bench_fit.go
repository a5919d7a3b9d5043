// carve bench fit: carve's latency model fitted to the co-runs of one
// evaluation, and others predicted again with it (no GPU needed).

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/evaluate"
)

// newFitCmd fits carve's model to one evaluation and re-predicts others.
func newFitCmd() *cobra.Command {
	var profiles, outDir, out string
	c := &cobra.Command{
		Use:   "fit TRAIN.json [HELDOUT.json...]",
		Short: "Fit carve's latency model to measured co-runs and predict others with it (no GPU needed)",
		Long: `fit reads evaluations saved by carve bench predict, fits the shared DRAM
bandwidth of carve's model to the co-runs of TRAIN.json, and predicts TRAIN
(in sample) and every HELDOUT evaluation (out of sample) again with it. The
measurements stay as they were. Each is written to OUT/NAME/ with its plots,
and the constants to calibration.json in OUT and beside the profiles, where
carve predict, plan and bench predict take them by default.`,
		Args: needArgs("an evaluation to fit to"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			f, err := evaluate.Fit(profiles, args, outDir)
			if err != nil {
				return err
			}
			g := f.GPU
			fmt.Fprintf(cmd.ErrOrStderr(), "shared bandwidth %.0f GB/s (%.0f%% of the most one kernel reached, %.0f GB/s): %.1f%% mean absolute error on %s; wrote %v\n",
				g.SharedBW, 100*g.SharedBW/g.EMBW, g.EMBW, 100*f.MAE, args[0], f.Calibration)
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), f.Evaluations)
			}
			for i, ev := range f.Evaluations {
				fmt.Fprintf(cmd.OutOrStdout(), "%s (%s)\n", args[i], map[bool]string{true: "fitted on it", false: "held out"}[i == 0])
				if err := ev.WriteTable(cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of the profiles the evaluations used")
	c.Flags().StringVar(&outDir, "out", "carve-fit", "directory for the re-predicted evaluations and calibration.json")
	addOutputFlag(c, &out)
	return c
}
