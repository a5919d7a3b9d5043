// carve bench overhead: launch latency, host cost per launch and startup
// time, with and without carve.

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
