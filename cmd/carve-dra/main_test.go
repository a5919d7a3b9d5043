package main

import (
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/chart"
)

// TestChartFlags: every container of the chart (deploy/helm/carve-dra)
// that runs carve-dra, the plugin or its webhook, with the chart's defaults
// and with MPS off, starts it with flags it has.
func TestChartFlags(t *testing.T) {
	found := map[string]bool{}
	for _, values := range []map[string]any{nil, {"mps": map[string]any{"enabled": false}}} {
		ms, err := chart.Render("../../deploy/helm/carve-dra", chart.Release{Name: "carve-dra", Namespace: "carve-system", KubeVersion: "v1.37.2"}, values)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := chart.Containers(ms)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if len(c.Command) == 0 || c.Command[0] != "carve-dra" {
				continue
			}
			found[c.Name] = true
			root := newRootCmd()
			cmd, args, err := root.Find(append(c.Command[1:], c.Args...))
			if err == nil {
				err = cmd.ParseFlags(args)
			}
			if err != nil {
				t.Errorf("%s, container %s: %v", c.Template, c.Name, err)
			} else if cmd.Flags().NArg() != 0 {
				t.Errorf("%s, container %s passes arguments %q", c.Template, c.Name, strings.Join(cmd.Flags().Args(), " "))
			}
		}
	}
	if !found["plugin"] || !found["webhook"] {
		t.Errorf("containers that run carve-dra: %v, want the plugin and the webhook", found)
	}
}

// TestNeedsNodeName: without a node name carve-dra says so and stops.
func TestNeedsNodeName(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	cmd := newRootCmd()
	cmd.SetArgs([]string{"--kubeconfig", "/nonexistent"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--node-name") {
		t.Errorf("without a node name: %v", err)
	}
}
