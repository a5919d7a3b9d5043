// Package topotest gives tests of other packages the topology carve
// discovered on the lent H100 (internal/topo/testdata/h100.json).
package topotest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/carve-gpu/carve/internal/topo"
)

// Path is the recording's file.
func Path() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "testdata", "h100.json")
}

// H100 parses the recording, failing the test if it cannot.
func H100(t testing.TB) *topo.Topology {
	t.Helper()
	b, err := os.ReadFile(Path())
	if err != nil {
		t.Fatal(err)
	}
	top, err := topo.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return top
}
