package topo

import (
	"os"
	"testing"
)

// loadRecorded is the topology carve discovered on the lent H100.
func loadRecorded(t *testing.T) *Topology {
	t.Helper()
	b, err := os.ReadFile("testdata/h100.json")
	if err != nil {
		t.Fatal(err)
	}
	top, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return top
}
