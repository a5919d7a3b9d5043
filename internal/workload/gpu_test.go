// Tests of the workloads on a real GPU: the GEMM, the competitors and every
// app of both suites against their CPU references, masked and not, and a
// GEMM confined to a green context.

package workload

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/gputest"
	"github.com/carve-gpu/carve/internal/hook"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// TestGPUGEMM checks the kernel against the CPU, unmasked and confined to
// one TPC, and that one TPC is much slower than all. Opt-in: CARVE_GPU_TESTS=1
// on the GPU the topology recording came from.
func TestGPUGEMM(t *testing.T) {
	gputest.Need(t)
	s, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGEMM(s, 1024)
	if err != nil {
		t.Fatal(err)
	}
	top := topotest.H100(t)
	one, err := partition.Mask(top, partition.Set{0})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64, 128, 256} {
		for _, m := range []*topo.Disable{nil, &one} {
			e, err := g.Check(n, m)
			if err != nil || e > 1e-5 {
				t.Errorf("n %d, masked %v: relative error %g, %v", n, m != nil, e, err)
			}
		}
	}
	if _, err := g.Time(nil); err != nil { // warm-up
		t.Fatal(err)
	}
	all, _ := g.Time(nil)
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
	if _, err := m.Iterate(); err != nil {
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
	ms, err := w.Iterate()
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

// TestGPUSuite checks every app of the isolation and prediction suites
// against its CPU reference on a small size.
func TestGPUSuite(t *testing.T) {
	gputest.Need(t)
	s, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(append([]string(nil), SuiteApps...), PredictKernels...) {
		if err := CheckApp(s, name); err != nil {
			t.Error(err)
		}
	}
}

// TestGPUGreen confines a GEMM to a green context of one group of SMs and
// sees it slow down by about the ratio of SMs; then it installs carve's
// launch hook and sees the driver refuse further green contexts. It runs in
// a process of its own: TestGPUGEMM installs the hook in this one.
func TestGPUGreen(t *testing.T) {
	gputest.Need(t)
	if os.Getenv("CARVE_TEST_GREEN_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGPUGreen$", "-test.v")
		cmd.Env = append(os.Environ(), "CARVE_TEST_GREEN_CHILD=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	err := OnThread(func() error {
		dev, _, err := cuda.OpenPrimary(0)
		if err != nil {
			return err
		}
		all, err := dev.SMs()
		if err != nil {
			return err
		}
		groups, rest, err := cuda.SplitSMs(all, 16)
		if err != nil {
			return err
		}
		t.Logf("%d SMs (min partition %d, alignment %d): %d groups of %d, %d left", all.SMCount(), all.MinPartition(),
			all.Alignment(), len(groups), groups[0].SMCount(), rest.SMCount())
		if groups[0].SMCount() != 16 || len(groups)*16+rest.SMCount() != all.SMCount() {
			t.Errorf("split of %d SMs into 16s: %d groups of %d and %d left", all.SMCount(), len(groups), groups[0].SMCount(), rest.SMCount())
		}
		full, err := Open(0)
		if err != nil {
			return err
		}
		gf, err := NewGEMM(full, 1024)
		if err != nil {
			return err
		}
		s, gc, err := OpenGreen(0, "bench", groups[0])
		if err != nil {
			return err
		}
		defer gc.Destroy()
		gg, err := NewGEMM(s, 1024)
		if err != nil {
			return err
		}
		if e, err := gg.Check(128, nil); err != nil || e > 1e-5 {
			t.Errorf("GEMM in a green context: relative error %g, %v", e, err)
		}
		green, err := gg.Samples(nil, 5)
		if err != nil {
			return err
		}
		if err := full.MakeCurrent(); err != nil {
			return err
		}
		whole, err := gf.Samples(nil, 5)
		if err != nil {
			return err
		}
		ratio := stats.Summarize(green).P50 / stats.Summarize(whole).P50
		t.Logf("1024^3 GEMM: %.3f ms on 16 SMs of a green context, %.3f ms on all: %.1fx", stats.Summarize(green).P50, stats.Summarize(whole).P50, ratio)
		if ratio < 4 {
			t.Errorf("16 of %d SMs only %.1fx slower: the green context did not confine the GEMM", all.SMCount(), ratio)
		}
		if _, err := hook.Install(); err != nil {
			return err
		}
		_, err = dev.NewGreenContext(groups[1])
		t.Logf("green context with carve's launch hook installed: %v", err)
		if !errors.Is(err, cuda.Result(801)) {
			t.Errorf("creating a green context beside a launch callback: %v, want CUDA_ERROR_NOT_SUPPORTED (801); if the driver now allows it, update the README", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
