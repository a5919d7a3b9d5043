// carve bench predict: the latency model's evaluation, random groups of
// profiled kernels co-run and compared with its predictions.

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// newPredictBenchCmd is the model's evaluation on real co-runs.
func newPredictBenchCmd() *cobra.Command {
	var sizes, outDir, out string
	var device int
	o := bench.PredictOptions{Progress: progressBar("predict")}
	c := &cobra.Command{
		Use:   "predict",
		Short: "Co-run random groups of profiled kernels and compare with the latency model",
		Long: `predict draws --groups random groups of 2 to 6 distinct kernels from the
profiles (the latency-prediction paper's section 7.3), each kernel on a
partition size drawn from --sizes with the group within the GPU, runs each
group in disjoint GPC-packed partitions (one process per kernel under MPS,
all started together in every round), and compares each kernel's median
latency with the predictions of the paper's model, carve's (with the
calibration it says it used), and the latency alone. The seed, groups,
partitions and every measurement are saved.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			var err error
			if o.Sizes, err = partition.ParseCounts(sizes, topo.MaskBits); err != nil {
				return err
			}
			if err := o.Check(); err != nil {
				return err
			}
			e, err := bench.NewEnv(device)
			if err != nil {
				return err
			}
			defer e.Close()
			ev, err := bench.Predict(e, o)
			if err != nil {
				return err
			}
			if outDir == "" {
				outDir = "carve-predict-" + time.Now().Format("2006-01-02")
			}
			path, err := ev.Save(outDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and its plots\n", path)
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), ev)
			}
			return ev.WriteTable(cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&o.Profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile (with counters)")
	c.Flags().StringVar(&o.Calibration, "calibration", "", "calibration.json from carve bench fit (default: beside the profiles, where it exists)")
	c.Flags().IntVar(&o.Groups, "groups", 100, "random groups to co-run")
	c.Flags().Uint64Var(&o.Seed, "seed", 1, "seed of the random groups")
	c.Flags().IntVar(&o.Rounds, "rounds", 10, "times each group runs; each kernel's median counts")
	c.Flags().StringVar(&sizes, "sizes", "11,22,33,44,55", "partition sizes to draw from, in TPCs (profiled sizes)")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the results (default carve-predict-DATE)")
	addOutputFlag(c, &out)
	return c
}
