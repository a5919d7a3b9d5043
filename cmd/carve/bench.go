package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/report"
)

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

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "report RESULT.json",
		Aliases: []string{"plot"},
		Short:   "Print a saved benchmark result's table and draw its plots again (no GPU needed)",
		Args:    oneArg("result file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := report.Load(args[0])
			if err != nil {
				return err
			}
			if err := bench.Plot(r, filepath.Dir(args[0])); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", filepath.Join(filepath.Dir(args[0]), r.Benchmark+".{png,svg}"))
			return bench.WriteTable(cmd.OutOrStdout(), r)
		},
	}
}

// benchFlags are the flags every benchmark has.
type benchFlags struct {
	device      int
	outDir, out string
}

func (f *benchFlags) add(c *cobra.Command) {
	c.Flags().IntVar(&f.device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&f.outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &f.out)
}

// withEnv runs a benchmark of separate processes in a fresh bench.Env
// (the GPU's topology, carve's shim, an MPS daemon of its own) and
// finishes its result.
func (f *benchFlags) withEnv(cmd *cobra.Command, check func() error, run func(*bench.Env) (*report.Result, error)) error {
	if err := checkOutput(f.out); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	e, err := bench.NewEnv(f.device)
	if err != nil {
		return err
	}
	defer e.Close()
	r, err := run(e)
	if err != nil {
		return err
	}
	return f.finish(cmd, r)
}

// finish saves r with its plots into --out, then prints it as JSON (-o
// json) or as its table.
func (f *benchFlags) finish(cmd *cobra.Command, r *report.Result) error {
	dir := f.outDir
	if dir == "" {
		dir = "carve-bench-" + time.Now().Format("2006-01-02")
	}
	path, err := bench.Save(r, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and its plots\n", path)
	if f.out == "json" {
		return writeJSON(cmd.OutOrStdout(), r)
	}
	return bench.WriteTable(cmd.OutOrStdout(), r)
}
