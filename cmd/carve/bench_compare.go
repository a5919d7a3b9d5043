package main

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/report"
)

func newOverheadCmd() *cobra.Command {
	var f benchFlags
	o := bench.OverheadOptions{Progress: progressBar("overhead")}
	c := &cobra.Command{
		Use:   "overhead",
		Short: "Launch latency, host cost per launch and startup time, with and without carve",
		Long: `overhead measures, in worker processes, for each mechanism (none; carve; MPS;
MPS with an active-thread percentage; carve under MPS; a green context; an LS
and a BE tenant of carve tide, each alone: what interposing launches costs):

  launch latency  from just before cuLaunchKernel to the kernel's first
                  instruction, read from the GPU's %globaltimer and related
                  to the host clock by a kernel that writes the timer into
                  mapped host memory (so latencies are late by at most the
                  time such a write takes to arrive, about a microsecond)
  host cost       the time the launch call takes on the host
  startup         from just before exec to the first kernel's start

Partitions take --share of the GPU (nvtaskset's 57%). Launch workers run in
--rounds rounds that alternate the mechanisms, each pinned to --cpu.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withEnv(cmd, o.Check, func(e *bench.Env) (*report.Result, error) { return bench.Overhead(e, o) })
		},
	}
	c.Flags().IntVar(&o.Launches, "launches", 1000, "launches timed per worker process")
	c.Flags().IntVar(&o.Rounds, "rounds", 5, "launch worker processes per mechanism, alternating")
	c.Flags().IntVar(&o.Starts, "starts", 50, "startups timed per mechanism, alternating")
	c.Flags().IntVar(&o.CPU, "cpu", runtime.NumCPU()-1, "CPU the launch workers are pinned to")
	c.Flags().Float64Var(&o.Share, "share", 0.57, "the partitions' share of the GPU")
	f.add(c)
	return c
}

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
sets, each program a separate process under MPS) and green contexts (both
programs as threads of this process: the API cannot partition processes).

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
