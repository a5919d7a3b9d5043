// The hidden worker processes of carve bench: each runs one workload and
// prints what it measured as JSON, or serves a co-run.

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/carve-gpu/carve/internal/workload"
)

// workerCmds are the hidden processes the benchmarks start: each runs one
// workload and prints what it measured as JSON, or serves a co-run. Flags
// that differ in default between workers have a variable each.
func workerCmds() []*cobra.Command {
	var device int
	worker := func(use, short string, run func(cmd *cobra.Command) error) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short + " (internal)", Hidden: true, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd) }}
		c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
		return c
	}
	printJSON := func(cmd *cobra.Command, v any) error { return json.NewEncoder(cmd.OutOrStdout()).Encode(v) }

	var n, gemmReps, suiteReps, kernelReps int
	gemm := worker("__gemm", "time the benchmark GEMM and print the times as JSON", func(cmd *cobra.Command) error {
		s, err := workload.Open(device)
		if err != nil {
			return err
		}
		g, err := workload.NewGEMM(s, n)
		if err != nil {
			return err
		}
		ms, err := g.Samples(nil, gemmReps)
		if err != nil {
			return err
		}
		return printJSON(cmd, ms)
	})
	gemm.Flags().IntVar(&n, "n", 2048, "matrix size")
	gemm.Flags().IntVar(&gemmReps, "reps", 5, "timed runs after one warm-up")

	var kind string
	competitor := worker("__competitor", "run a competitor kernel until killed; say running after the first", func(cmd *cobra.Command) error {
		s, err := workload.Open(device)
		if err != nil {
			return err
		}
		c, err := workload.NewWorkload(s, kind)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			if _, err := c.Iterate(); err != nil {
				return err
			}
			if i == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "running")
			}
		}
	})
	competitor.Flags().StringVar(&kind, "kind", "compute", "compute (Mandelbrot), memory (random walks) or an app of the isolation suite")

	var launches, cpu int
	var greenShare float64
	launch := worker("__launch", "time launches and print them as JSON", func(cmd *cobra.Command) error {
		runtime.LockOSThread()
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("pinning to CPU %d: %w", cpu, err)
			}
		}
		s, err := workload.OpenStamp(device, greenShare)
		if err != nil {
			return err
		}
		ls, err := workload.MeasureLaunches(s, launches)
		if err != nil {
			return err
		}
		return printJSON(cmd, ls)
	})
	launch.Flags().IntVar(&launches, "n", 1000, "launches")
	launch.Flags().IntVar(&cpu, "cpu", -1, "CPU to pin the launching thread to (-1: none)")
	first := worker("__first", "launch one kernel and print when it started", func(cmd *cobra.Command) error {
		s, err := workload.OpenStamp(device, greenShare)
		if err != nil {
			return err
		}
		st, err := workload.NewStamper(s, 1)
		if err != nil {
			return err
		}
		ns, err := st.FirstKernel()
		if err != nil {
			return err
		}
		return printJSON(cmd, map[string]int64{"first_kernel_ns": ns})
	})
	for _, c := range []*cobra.Command{launch, first} {
		c.Flags().Float64Var(&greenShare, "green-share", 0, "launch in a green context of this share of the SMs")
	}

	suite := worker("__suite", "check and time the isolation suite, print the times as JSON", func(cmd *cobra.Command) error {
		s, err := workload.Open(device)
		if err != nil {
			return err
		}
		if err := workload.CheckSuite(s); err != nil {
			return err
		}
		byApp, err := workload.SuiteSamples(s, suiteReps)
		if err != nil {
			return err
		}
		return printJSON(cmd, byApp)
	})
	suite.Flags().IntVar(&suiteReps, "reps", 1000, "timed runs of each app after one warm-up")

	var name string
	kernel := worker("__kernel", "run one suite kernel reps times, for ncu", func(cmd *cobra.Command) error {
		app, err := workload.OpenApp(device, name)
		if err != nil {
			return err
		}
		for range kernelReps {
			if _, err := app.Iterate(); err != nil {
				return err
			}
		}
		return nil
	})
	kernel.Flags().IntVar(&kernelReps, "reps", 2, "runs")
	corun := worker("__corun", "hold a kernel ready; run it once per line of input and print its time", func(cmd *cobra.Command) error {
		app, err := workload.OpenApp(device, name)
		if err != nil {
			return err
		}
		return workload.ServeCoRun(app, os.Stdin, cmd.OutOrStdout())
	})
	for _, c := range []*cobra.Command{kernel, corun} {
		c.Flags().StringVar(&name, "name", "", "the kernel")
	}
	return []*cobra.Command{gemm, competitor, launch, first, suite, kernel, corun}
}
