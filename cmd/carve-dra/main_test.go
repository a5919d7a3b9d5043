// Tests of carve-dra's command line (main.go) against the Helm chart that
// starts it: every flag the chart passes exists, the plugin's container
// mounts every node path carve-dra uses, and it stops without a node name.

package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/carve-gpu/carve/internal/chart/charttest"
	"github.com/carve-gpu/carve/internal/xid"
)

// TestChartFlags: every container of the chart (deploy/helm/carve-dra)
// that runs carve-dra, the plugin or its webhook, with the chart's defaults
// and with MPS off, starts it with flags it has.
func TestChartFlags(t *testing.T) {
	found := map[string]bool{}
	for _, values := range []map[string]any{nil, {"mps": map[string]any{"enabled": false}}} {
		for _, c := range charttest.Containers(t, values) {
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

// TestBoundedDurations: an interval that would spin a CPU, or a taint of
// no sense, is refused before carve-dra does anything.
func TestBoundedDurations(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--health-interval", "1ns", "--health-interval 1ns: want 10ms to 1h0m0s"},
		{"--health-interval", "2h", "--health-interval 2h0m0s: want 10ms to 1h0m0s"},
		{"--xid-taint-for", "-1s", "--xid-taint-for -1s: want 0"},
	} {
		cmd := newRootCmd()
		cmd.SetArgs([]string{"--kubeconfig", "/nonexistent", "--node-name", "n", tc.flag, tc.value})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.flag, tc.value, err, tc.want)
		}
	}
}

// pathFlags are carve-dra's flags that name a place on the node it uses.
var pathFlags = []string{"runtime-dir", "cdi-dir", "mps-dir", "mps-shm", "plugin-dir", "registrar-dir"}

// TestChartMounts: the chart's plugin container mounts every place on the
// node that carve-dra uses (its path flags, as the chart starts it), each
// at its own path on the node, and nothing else: not the whole of the
// kubelet's plugins directory, where other drivers' and CSI sockets are.
// With health.xid (the default) it also mounts the kernel log that Xids
// are read from, and is privileged, which opening it takes; without, it is
// neither.
func TestChartMounts(t *testing.T) {
	for _, values := range []map[string]any{nil, {"mps": map[string]any{"enabled": false}}, {"health": map[string]any{"xid": false}}} {
		var ds appsv1.DaemonSet
		for _, m := range charttest.Render(t, values) {
			if strings.Contains(m.YAML, "\nkind: DaemonSet\n") && strings.Contains(m.YAML, "\n  name: carve-dra\n") {
				if err := yaml.UnmarshalStrict([]byte(m.YAML), &ds); err != nil {
					t.Fatal(err)
				}
			}
		}
		pod := ds.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			t.Fatalf("values %v: carve-dra's DaemonSet has %d containers, want its plugin", values, len(pod.Containers))
		}
		c := pod.Containers[0]
		cmd, args, err := newRootCmd().Find(c.Command[1:])
		if err == nil {
			err = cmd.ParseFlags(args)
		}
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]string{} // path: the flag that names it
		for _, f := range pathFlags {
			if p := cmd.Flags().Lookup(f).Value.String(); p != "" {
				used[p] = "--" + f
			}
		}
		readsXids := values["health"] == nil
		if readsXids {
			used[xid.KernelLog] = "the kernel log"
		}
		hostPaths := map[string]string{}
		for _, v := range pod.Volumes {
			if v.HostPath != nil {
				hostPaths[v.Name] = v.HostPath.Path
			}
		}
		mounted := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if used[m.MountPath] == "" {
				t.Errorf("values %v: the plugin mounts %s, which carve-dra does not use", values, m.MountPath)
			}
			if hostPaths[m.Name] != m.MountPath {
				t.Errorf("values %v: the plugin mounts the node's %q at %s: carve-dra's paths must be the node's", values, hostPaths[m.Name], m.MountPath)
			}
			mounted[m.MountPath] = true
		}
	used:
		for p, what := range used {
			for m := range mounted {
				if p == m || strings.HasPrefix(p, m+"/") {
					continue used
				}
			}
			t.Errorf("values %v: %s (%s) is not mounted into the plugin", values, p, what)
		}
		privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
		if privileged != readsXids {
			t.Errorf("values %v: the plugin is privileged: %v; it must be exactly where it reads the kernel log (%v)", values, privileged, readsXids)
		}
	}
}
