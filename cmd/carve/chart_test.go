package main

import (
	"testing"

	"github.com/carve-gpu/carve/internal/chart/charttest"
)

// TestChartDaemonFlags: the chart's carve daemon container (with MPS on,
// off, and stopped on exit) starts carve daemon with flags it has.
func TestChartDaemonFlags(t *testing.T) {
	runs := 0
	for _, mps := range []map[string]any{{"enabled": true}, {"enabled": false}, {"stopOnExit": true}} {
		for _, c := range charttest.Containers(t, map[string]any{"mps": mps}) {
			if len(c.Command) < 2 || c.Command[0] != "carve" {
				continue
			}
			runs++
			cmd, args, err := newRoot().Find(append(c.Command[1:], c.Args...))
			if err == nil {
				err = cmd.ParseFlags(args)
			}
			if err != nil || cmd.Name() != "daemon" || cmd.Flags().NArg() != 0 {
				t.Errorf("%s with mps %v, container %s runs %q: %v", c.Template, mps, c.Name, c.Command, err)
			}
		}
	}
	if runs != 3 {
		t.Errorf("%d containers run carve, want carve daemon once for each of 3 settings", runs)
	}
}
