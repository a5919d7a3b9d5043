// carve predict: kernels' latencies alone and co-running in disjoint
// partitions, by carve's model or the paper's; and the note that says which
// calibration the model used.

package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/model"
)

func newPredictCmd() *cobra.Command {
	var profiles, which, calibration, out string
	c := &cobra.Command{
		Use:   "predict KERNEL:TPCS [KERNEL:TPCS...]",
		Short: "Predict kernels' latencies alone and co-running in disjoint partitions",
		Long: `predict reads profiles (carve profile) and predicts each kernel's latency on
its partition of TPCS TPCs, alone (the paper's eq. 4) and co-running with the
others in disjoint partitions (eq. 5-16), with the execution windows it used.

--model paper applies the equations as written; carve (the default) scales
the latency measured alone on the partition instead of eq. 4's estimate, and
shares the DRAM bandwidth of --calibration (default: calibration.json beside
the profiles, written by carve bench fit).`,
		Example: "  carve predict --profiles carve-profiles vadd:22 raytrace:22 mvt:22",
		Args:    needArgs("a kernel and its partition"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if which != "carve" && which != "paper" {
				return fmt.Errorf("unknown model %q: want paper or carve", which)
			}
			names, tpcs, err := model.ParsePairs(args, "TPCS")
			if err != nil {
				return err
			}
			g, ks, used, err := model.LoadCalibrated(profiles, calibration)
			if err != nil {
				return err
			}
			ps, err := model.Placements(ks, names, tpcs, profiles)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			if which == "carve" {
				pred, err := g.Carve(ks)(ps)
				if err != nil {
					return err
				}
				if out == "json" {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"gpu": g, "calibration": used, "placements": args, "co_run_ms": pred})
				}
				fmt.Fprintf(tw, "carve's model, sharing %.0f GB/s of DRAM bandwidth (%s)\n", g.Shared(), calibrationNote(used))
				fmt.Fprintln(tw, "KERNEL\tTPCS\tALONE MS (PROFILED)\tDRAM GB/S ALONE\tPREDICTED CO-RUN MS\tSLOWDOWN")
				for i, p := range pred {
					alone, _ := ps[i].Kernel.C(ps[i].SMs)
					bw, _ := ps[i].Kernel.BWIsolated(ps[i].SMs)
					fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.0f\t%.3f\t%.2fx\n", names[i], ps[i].SMs/2, alone, bw, p, p/alone)
				}
				return tw.Flush()
			}
			pred, ws, err := g.Predict(ps)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"gpu": g, "placements": args, "predictions": pred, "windows": ws})
			}
			fmt.Fprintln(tw, "the paper's model as written")
			fmt.Fprintln(tw, "KERNEL\tTPCS\tMEASURED ALONE MS\tPREDICTED ALONE MS (EQ. 4)\tPREDICTED CO-RUN MS (EQ. 8)\tSLOWDOWN")
			for i, p := range pred {
				alone, _ := ps[i].Kernel.C(ps[i].SMs)
				fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.2fx\n", names[i], ps[i].SMs/2, alone, p.Alone, p.CoRun, p.CoRun/p.Alone)
			}
			fmt.Fprintln(tw, "\nWINDOW MS\tRUNNING\tBANDWIDTH GB/S\tI(w)")
			for _, w := range ws {
				var run []string
				for _, i := range w.Running {
					run = append(run, names[i])
				}
				fmt.Fprintf(tw, "%.3f-%.3f\t%s\t%.0f\t%.2f\n", w.Start, w.End, strings.Join(run, ","), w.BW, w.I)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile")
	c.Flags().StringVar(&which, "model", "carve", "carve, or paper (the equations as written, with their windows)")
	c.Flags().StringVar(&calibration, "calibration", "", "calibration.json from carve bench fit (default: beside the profiles, where it exists)")
	addOutputFlag(c, &out)
	return c
}

// calibrationNote says which calibration carve's model used.
func calibrationNote(used string) string {
	if used == "" {
		return "no calibration found: the most one kernel reached, which overstates it; fit one with carve bench fit"
	}
	return "calibration " + used
}
