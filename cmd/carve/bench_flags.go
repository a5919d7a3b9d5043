// The flags every benchmark of carve bench has, and how one runs in a fresh
// bench.Env and saves and prints its result.

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/report"
)

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
