package main

import (
	"testing"

	"github.com/carve-gpu/carve/internal/chart/charttest"
)

// TestChartDaemonFlags: the chart's carve daemon container (with MPS on,
// off, and stopped on exit; its metrics exposed, with command lines) starts
// carve daemon with flags it has, listening on the pod's 127.0.0.1 unless
// the metrics are exposed.
func TestChartDaemonFlags(t *testing.T) {
	runs := 0
	for _, values := range []map[string]any{{"mps": map[string]any{"enabled": true}}, {"mps": map[string]any{"enabled": false}},
		{"mps": map[string]any{"stopOnExit": true}}, {"metrics": map[string]any{"expose": true, "showCommands": true}},
		{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}} {
		exposed := values["metrics"] != nil
		for _, c := range charttest.Containers(t, values) {
			if len(c.Command) < 2 || c.Command[0] != "carve" {
				continue
			}
			runs++
			cmd, args, err := newRoot().Find(append(c.Command[1:], c.Args...))
			if err == nil {
				err = cmd.ParseFlags(args)
			}
			if err != nil || cmd.Name() != "daemon" || cmd.Flags().NArg() != 0 {
				t.Errorf("%s with %v, container %s runs %q: %v", c.Template, values, c.Name, c.Command, err)
				continue
			}
			listen, _ := cmd.Flags().GetString("listen")
			show, _ := cmd.Flags().GetBool("show-commands")
			want := "127.0.0.1:9400"
			if exposed {
				want = "0.0.0.0:9400"
			}
			if listen != want || show != (values["metrics"] != nil && values["metrics"].(map[string]any)["showCommands"] == true) {
				t.Errorf("with %v, carve daemon listens on %s (want %s), shows commands %v", values, listen, want, show)
			}
		}
	}
	if runs != 5 {
		t.Errorf("%d containers run carve, want carve daemon once for each of 5 settings", runs)
	}
}
