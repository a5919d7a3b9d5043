// Package charttest renders the repository's chart for the tests of
// packages two levels below its root (cmd/..., internal/...), installed as
// the README says: release carve-dra in carve-system, on the Kubernetes
// version the end-to-end API server runs.
package charttest

import (
	"testing"

	"github.com/carve-gpu/carve/internal/chart"
)

// Dir is deploy/helm/carve-dra, from a package's directory.
const Dir = "../../deploy/helm/carve-dra"

// Release is how the tests install the chart.
var Release = chart.Release{Name: "carve-dra", Namespace: "carve-system", KubeVersion: "v1.37.2"}

// Render renders the chart for Release with values over its defaults.
func Render(t testing.TB, values map[string]any) []chart.Manifest {
	t.Helper()
	ms, err := chart.Render(Dir, Release, values)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// Containers is every container of the chart rendered with values.
func Containers(t testing.TB, values map[string]any) []chart.Container {
	t.Helper()
	cs, err := chart.Containers(Render(t, values))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
