// carve bench: the group of carve's benchmarks and of the hidden worker
// processes they start.

package main

import "github.com/spf13/cobra"

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure carve against other ways of sharing the GPU",
		Long: `bench runs carve's benchmarks on this GPU and writes each result as JSON
with PNG and SVG plots, in --out (default carve-bench-DATE).`,
	}
	c.AddCommand(newOverheadCmd(), newEnforcementCmd(), newGranularityCmd(), newIsolationCmd(), newPredictBenchCmd(),
		newFitCmd(), newColourCmd(), newReadersCmd(), newServeCmd(), newKernelsCmd(), newReportCmd())
	c.AddCommand(workerCmds()...)
	return c
}
