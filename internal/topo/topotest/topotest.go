// Package topotest gives tests of other packages the topology carve
// discovered on the lent H100 (internal/topo/testdata/h100.json), and a
// second GPU of the same model made from it, with some of its TPCs dead,
// as two GPUs of one node differ by floorsweeping.
package topotest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// SecondUUID is the second GPU's UUID: that of the fake driver's second
// device (shim/fake/gpus.c), as H100's is its first's.
const SecondUUID = "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"

// SecondDead are the mask bits live on the recorded H100 and dead on the
// second GPU: one TPC of each of four GPCs.
var SecondDead = []int{10, 27, 46, 63}

// Second is a second H100 of the node: the recording with the TPCs of
// SecondDead's bits dead (so 62 TPCs, 124 SMs), its logical indexes made
// again over the TPCs left, and SecondUUID.
func Second(t testing.TB) *topo.Topology {
	t.Helper()
	top := H100(t)
	bitSMs, gpcOf := map[int][]int{}, map[int]int{}
	sms := 0
	for _, p := range top.TPCs {
		if slices.Contains(SecondDead, p.Bit) {
			continue
		}
		bitSMs[p.Bit], gpcOf[p.Bit] = p.SMs, p.GPC
		sms += len(p.SMs)
	}
	top.TPCs, top.GPCs = topo.Build(bitSMs, gpcOf)
	top.UUID, top.SMCount = SecondUUID, sms
	if err := top.Validate(); err != nil {
		t.Fatal(err)
	}
	return top
}
