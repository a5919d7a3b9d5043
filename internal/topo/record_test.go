// The topologies carve discovered on lent GPUs (testdata/h100.json,
// h200.json), loaded for the package's tests.

package topo

import (
	"os"
	"testing"
)

// loadRecorded is the topology carve discovered on the lent H100.
func loadRecorded(t *testing.T) *Topology { return loadRecording(t, "h100.json") }

// loadRecording is a topology carve discovered on a lent GPU (testdata:
// h100.json, h200.json).
func loadRecording(t *testing.T, name string) *Topology {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	top, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return top
}
