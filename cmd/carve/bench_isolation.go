// carve bench isolation: FGPU's isolation experiment, an app suite on half
// the GPU beside interferers on the other half.

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/report"
)

func newIsolationCmd() *cobra.Command {
	var f benchFlags
	o := bench.IsolationOptions{Progress: progressBar("isolation")}
	c := &cobra.Command{
		Use:   "isolation",
		Short: "FGPU's isolation experiment: an app suite on half the GPU beside interferers",
		Long: `isolation runs a suite of six apps (matrix multiply, bitonic sort, vector add,
scalar product, fast Walsh transform, a CFD-like stencil; each checked against
a CPU reference first) in one partition, alone and while matrix multiply, the
Walsh transform or vector add runs without pause in the other, for each
mechanism: none (MPS, no limits), MPS active-thread percentages, carve (TPC
sets, each program a separate process under MPS), carve with bandwidth shares
of the same split on the same TPC sets (--bw --bw-strict: each in its slot of
each epoch; and --bw alone: work-conserving), and green contexts (both
programs as threads of this process: the API cannot partition processes).
Each setup first times the apps with the other partition idle: for the strict
shares, that is the apps' time in their slots alone.

For each app and mechanism it reports FGPU's variation: the largest mean time
beside an interferer over the mean time with the other partition idle, minus
one; then the average and maximum over the apps (FGPU's Table III).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withEnv(cmd, o.Check, func(e *bench.Env) (*report.Result, error) { return bench.Isolation(e, o) })
		},
	}
	c.Flags().IntVar(&o.Reps, "reps", 1000, "timed runs of each app per setup (FGPU: 1000)")
	c.Flags().Float64Var(&o.Share, "share", 0.5, "the apps' share of the GPU; the interferer gets the rest")
	f.add(c)
	return c
}
