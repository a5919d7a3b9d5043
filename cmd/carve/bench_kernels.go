// carve bench kernels: where a job's GPU time goes, its recorded kernels by
// duration and by shape (no GPU needed).

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
)

func newKernelsCmd() *cobra.Command {
	o := bench.KernelOptions{Limits: bench.H100}
	var out string
	c := &cobra.Command{
		Use:   "kernels JOB=RECORDS...",
		Short: "Where a job's GPU time goes: its kernels by duration and by shape, from recorded kernels (no GPU needed)",
		Long: `kernels reads the kernels a job ran, as experiments/kernels/recorder.c records
them (a CUPTI library the driver loads by CUDA_INJECTION64_PATH, so the program
runs unchanged; experiments/kernels/run.sh records carve bench serve's BE jobs),
and prints, for each job, its kernel time (the kernels' durations summed), its
span and how busy the GPU was over it, and the shares of its kernel time:

  by duration: <50us, 50-200us, 200us-1ms, >1ms;
  by shape: many blocks (more than one wave: the SMs x the blocks an SM holds,
    estimated from the kernel's threads, registers and shared memory; slicing
    by block index shortens them), one wave or less (persistent kernels among
    them: slicing does not shorten them), cooperative launches, and launches
    in clusters;

then its top kernels by time with their shape, grid, waves and occupancy.
Tables in Markdown, or -o json.

A job is JOB=FILE, or FILE for a job named by the file's name up to its
first dot; FILE may be a glob (the recorder writes one file per
process, "%p" in CARVE_KERNELS_OUT); a job named twice reads all its files;
a file whose name ends in .gz is read through gzip.`,
		Example: `  carve bench kernels densenet161='out/densenet161.*.tsv' transformer-train='out/transformer-train.*.tsv'
  carve bench kernels --after-gap 1s -o json out/resnet50-train.1234.tsv`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			sums, err := bench.SummarizeKernelFiles(args, o)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), sums)
			}
			return bench.WriteKernelTables(cmd.OutOrStdout(), sums)
		},
	}
	c.Flags().DurationVar(&o.AfterGap, "after-gap", 0, "leave out each job's kernels up to its last idle gap of at least this (its warm-up, where the job pauses before it is measured); 0 keeps all")
	c.Flags().IntVar(&o.Top, "top", 15, "top kernels shown per job (below 0: all)")
	c.Flags().IntVar(&o.Limits.SMs, "sms", bench.H100.SMs, "the GPU's SMs (the other limits are an H100's)")
	addOutputFlag(c, &out)
	return c
}
