// carve bench granularity: GEMM time at every partition size each way of
// sharing the GPU can express.

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
)

func newGranularityCmd() *cobra.Command {
	var f benchFlags
	o := bench.GranularityOptions{Progress: func(what string) bench.Progress { return progressBar(what) }}
	c := &cobra.Command{
		Use:   "granularity",
		Short: "GEMM time at every partition size carve can express (1..N TPCs)",
		Long: `granularity times an n x n float GEMM (carve's own kernel, checked against a
CPU reference first) at every partition size each mechanism can express:
carve on every TPC count from 1 to all, each partition placed GPC-packed;
MPS at every active-thread percentage (one client process each); green
contexts at every multiple of the driver's SM group. It draws time against
SMs, with MiG's documented sizes for comparison (MiG cannot be measured
where it is not enabled).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(f.out); err != nil {
				return err
			}
			o.Device = f.device
			r, err := bench.Granularity(o)
			if err != nil {
				return err
			}
			return f.finish(cmd, r)
		},
	}
	c.Flags().IntVar(&o.N, "n", 2048, "matrix size (a multiple of 64)")
	c.Flags().IntVar(&o.Reps, "reps", 5, "timed runs per partition size, after one warm-up")
	c.Flags().StringSliceVar(&o.Mechanisms, "mechanisms", []string{"carve", "mps", "green"},
		"what to measure: carve (TPC masks), mps (active-thread percentages, one process per size), green (green contexts, in this process)")
	f.add(c)
	return c
}
