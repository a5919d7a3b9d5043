package main

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestDaemonSetFlags: the DaemonSet in deploy/kubernetes starts carve-dra
// with flags carve-dra has.
func TestDaemonSetFlags(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range ds.Spec.Template.Spec.Containers {
		if len(c.Command) == 0 || c.Command[0] != "carve-dra" {
			continue
		}
		found = true
		cmd := newRootCmd()
		if err := cmd.ParseFlags(append(c.Command[1:], c.Args...)); err != nil {
			t.Errorf("container %s: %v", c.Name, err)
		}
		if cmd.Flags().NArg() != 0 {
			t.Errorf("container %s passes arguments %q", c.Name, strings.Join(cmd.Flags().Args(), " "))
		}
	}
	if !found {
		t.Error("no container runs carve-dra")
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
