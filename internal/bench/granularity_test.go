// Tests of granularity.go: the MPS percentages for each TPC count, and the
// MPS series measured with a fake worker.

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/mps"
)

func TestMPSPercentages(t *testing.T) {
	p := MPSPercentages(66)
	if len(p) != 66 || p[0] != 2 || p[32] != 50 || p[65] != 100 {
		t.Fatalf("%v", p)
	}
	for i := 1; i < len(p); i++ {
		if p[i] <= p[i-1] {
			t.Fatalf("percentages not strictly rising at %d: %v", i, p)
		}
	}
}

// A fake worker prints times that depend on the percentage it was given.
func TestGranularityMPSWithFakeWorker(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "worker")
	os.WriteFile(exe, []byte("#!/bin/sh\necho \"[$((1000 / CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)), 1]\"\n"), 0o755)
	d := mps.Daemon{Root: "/r"}
	var seen []int
	s, err := GranularityMPS(ExecWorker(exe), d, 4, 132, func(done, _ int) { seen = append(seen, done) })
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 4 || len(seen) != 4 {
		t.Fatalf("%d points, progress %v", len(s.Points), seen)
	}
	// 25% -> 40 ms and 1 ms: median 20.5; 132 SMs x 25% = 33
	if p := s.Points[0]; p.SMs != 33 || p.Stats.P50 != 20.5 || p.TPCs != 1 {
		t.Errorf("first point %+v", p)
	}
	if p := s.Points[3]; p.SMs != 132 || p.Stats.Max != 10 {
		t.Errorf("last point %+v", p)
	}

	os.WriteFile(exe, []byte("#!/bin/sh\necho not json\n"), 0o755)
	if _, err := GranularityMPS(ExecWorker(exe), d, 2, 132, func(int, int) {}); err == nil || !strings.Contains(err.Error(), "not json") {
		t.Errorf("bad worker output: %v", err)
	}
}
