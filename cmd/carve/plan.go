// carve plan: the smallest partitions on which co-running kernels meet
// their deadlines, by carve's model.

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/model"
)

func newPlanCmd() *cobra.Command {
	var profiles, calibration, out string
	c := &cobra.Command{
		Use:   "plan KERNEL:DEADLINE_MS [KERNEL:DEADLINE_MS...]",
		Short: "Find the smallest partitions on which co-running kernels meet their deadlines",
		Long: `plan gives each kernel the fewest profiled TPCs on which its predicted co-run
latency (carve's model) meets its deadline, growing the partition of whichever
kernel misses until all meet them, or says that no placement does.`,
		Example: "  carve plan --profiles carve-profiles raytrace:3 vadd:1.5",
		Args:    needArgs("a kernel and its deadline"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			names, deadlines, err := model.ParsePairs(args, "DEADLINE_MS")
			if err != nil {
				return err
			}
			g, ks, used, err := model.LoadCalibrated(profiles, calibration)
			if err != nil {
				return err
			}
			kernels := make([]*model.Kernel, len(names))
			for i, n := range names {
				if kernels[i] = ks[n]; kernels[i] == nil {
					return fmt.Errorf("no profile of %s in %s", n, profiles)
				}
			}
			sms, pred, err := model.Plan(g, kernels, deadlines, g.Carve(ks))
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"kernels": names, "deadlines_ms": deadlines, "sms": sms,
					"predictions": pred, "calibration": used})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KERNEL\tTPCS\tDEADLINE MS\tPREDICTED CO-RUN MS")
			total := 0
			for i := range names {
				fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\n", names[i], sms[i]/2, deadlines[i], pred[i])
				total += sms[i] / 2
			}
			fmt.Fprintf(tw, "%d of %d TPCs; carve's model with %s\n", total, g.N/2, calibrationNote(used))
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile")
	c.Flags().StringVar(&calibration, "calibration", "", "calibration.json from carve bench fit (default: beside the profiles, where it exists)")
	addOutputFlag(c, &out)
	return c
}
