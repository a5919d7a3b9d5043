// carve bench enforcement: a GEMM victim's times beside a compute- or
// memory-heavy competitor, under each way of sharing the GPU.

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/report"
)

func newEnforcementCmd() *cobra.Command {
	var f benchFlags
	o := bench.EnforcementOptions{Progress: progressBar("enforcement")}
	c := &cobra.Command{
		Use:   "enforcement",
		Short: "A GEMM victim's times beside a compute- or memory-heavy competitor, per mechanism",
		Long: `enforcement runs a GEMM victim (samples timed launches) in one share of the GPU
while a competitor runs continuously in the rest: Mandelbrot (compute-heavy) or
random walks over 1 GiB (memory-heavy). Victims: sgemm (carve's own kernel) and
torch (torch.matmul in a PyTorch process, needs python3 with torch). Each is a
separate process under an MPS daemon of carve's own. Mechanisms: none (MPS, no
limits), MPS active-thread percentages, carve (TPC sets, GPC-packed) and, for
sgemm, green contexts (victim and competitor as two threads of this process:
the API cannot partition separate processes). The reference is the victim's
time alone on the whole GPU divided by the share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withEnv(cmd, o.Check, func(e *bench.Env) (*report.Result, error) { return bench.Enforcement(e, o) })
		},
	}
	c.Flags().IntVar(&o.N, "n", 2048, "victim GEMM size (a multiple of 64)")
	c.Flags().IntVar(&o.Samples, "samples", 1000, "victim launches timed per setup")
	c.Flags().Float64Var(&o.Share, "share", 0.57, "the victim's share of the GPU (nvtaskset's 57/43 split by default)")
	c.Flags().StringSliceVar(&o.Victims, "victims", []string{"sgemm", "torch"}, "victims to measure: sgemm (carve's kernel), torch (torch.matmul in PyTorch)")
	c.Flags().StringVar(&o.Python, "python", "python3", "the Python with PyTorch, for the torch victim")
	f.add(c)
	return c
}
