package bench

import (
	"testing"

	"github.com/carve-gpu/carve/internal/gputest"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// TestGPUGEMM checks the kernel against the CPU, unmasked and confined to
// one TPC, and that one TPC is much slower than all. Opt-in: CARVE_GPU_TESTS=1
// on the GPU the topology recording came from.
func TestGPUGEMM(t *testing.T) {
	gputest.Need(t)
	g, err := NewGEMM(0, 1024)
	if err != nil {
		t.Fatal(err)
	}
	top := topotest.H100(t)
	one, err := partition.Mask(top, partition.Set{0})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64, 128, 256} {
		for _, m := range []*topo.Mask{nil, &one} {
			e, err := g.Check(n, m)
			if err != nil || e > 1e-5 {
				t.Errorf("n %d, masked %v: relative error %g, %v", n, m != nil, e, err)
			}
		}
	}
	all, _ := g.Time(nil)
	all, _ = g.Time(nil)
	single, err := g.Time(&one)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1024^3 GEMM: %.3f ms on all TPCs, %.3f ms on one", all, single)
	if single < 20*all {
		t.Errorf("one TPC (%.3f ms) is not much slower than 66 (%.3f ms): the mask did not hold", single, all)
	}
}

// TestGPUCompetitors checks both competitor kernels against their CPU
// references on small sizes.
func TestGPUCompetitors(t *testing.T) {
	gputest.Need(t)
	s, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewCompetitor(s, "compute", 256)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(); err != nil {
		t.Fatal(err)
	}
	got, err := m.Result()
	if err != nil {
		t.Fatal(err)
	}
	want := MandelbrotCPU(256, 256, mandelIters)
	diff := 0
	for i := range want {
		if got[i] != want[i] {
			diff++
		}
	}
	if diff > len(want)/1000 {
		t.Errorf("mandelbrot: %d of %d pixels differ from the CPU", diff, len(want))
	}
	w, err := NewCompetitor(s, "memory", 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := w.Step()
	if err != nil {
		t.Fatal(err)
	}
	gotw, err := w.Result()
	if err != nil {
		t.Fatal(err)
	}
	wantw := RandWalkCPU(1<<16, walkSteps, walkThreads)
	for i := range wantw {
		if gotw[i] != wantw[i] {
			t.Fatalf("randwalk thread %d: GPU %d, CPU %d", i, gotw[i], wantw[i])
		}
	}
	t.Logf("mandelbrot: %d of %d pixels differ; randwalk over 256 KiB: %.3f ms", diff, len(want), ms)
}
