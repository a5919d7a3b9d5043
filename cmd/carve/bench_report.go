// carve bench report: a saved benchmark result's table, and its plots drawn
// again beside it (no GPU needed).

package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/report"
)

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
