// Tests of suite.go's CPU references (bitonic sort, Walsh transform,
// stencil, scalar product) and its relative error.

package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBitonicCPUSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 256, 4096} {
		keys := make([]uint32, n)
		for i := range keys {
			keys[i] = r.Uint32() % 1000 // with repeats
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		if got := BitonicCPU(keys); !slices.Equal(got, want) {
			t.Errorf("n %d: the network did not sort", n)
		}
	}
}

func TestWalshCPU(t *testing.T) {
	// H2 x H2 on a unit vector is a column of +-1/2; the orthonormal
	// transform is its own inverse.
	got := WalshCPU([]float64{1, 0, 0, 0})
	for i, v := range got {
		if math.Abs(v-0.5) > 1e-12 {
			t.Errorf("WHT(e0)[%d] = %g, want 0.5", i, v)
		}
	}
	if got := WalshCPU([]float64{0, 1, 0, 0}); math.Abs(got[1]+0.5) > 1e-12 || math.Abs(got[2]-0.5) > 1e-12 {
		t.Errorf("WHT(e1) = %v, want [.5 -.5 .5 -.5]", got)
	}
	x := make([]float64, 1024)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	if e := relErr64(WalshCPU(WalshCPU(x)), x); e > 1e-12 {
		t.Errorf("transforming twice is off by %g", e)
	}
}

func TestStencilCPU(t *testing.T) {
	// A constant field stays constant (0.2 * 5c rounds back to c for c = 1);
	// a spike spreads to its four neighbours.
	w, h := 5, 4
	x := make([]float32, w*h)
	for i := range x {
		x[i] = 1
	}
	for i, v := range StencilCPU(x, w, h, 3) {
		if v != 1 {
			t.Fatalf("cell %d = %g after 3 steps of a constant field", i, v)
		}
	}
	x = make([]float32, w*h)
	x[1*w+2] = 5
	got := StencilCPU(x, w, h, 1)
	for _, i := range []int{1*w + 2, 1*w + 1, 1*w + 3, 2*w + 2} {
		if got[i] != 1 {
			t.Errorf("cell %d = %g, want 1", i, got[i])
		}
	}
	if got[0*w+2] != 0 { // a border cell is copied, not averaged
		t.Errorf("border cell = %g, want 0", got[2])
	}
}

func TestScalarProdCPU(t *testing.T) {
	got := ScalarProdCPU([]float32{1, 2, 3, 4, 5, 6}, []float32{1, 1, 1, 2, 2, 2}, 3)
	if !slices.Equal(got, []float64{6, 30}) {
		t.Errorf("got %v, want [6 30]", got)
	}
}

func TestRelErr64(t *testing.T) {
	if e := relErr64([]float64{1, 2}, []float64{1, 2}); e != 0 {
		t.Errorf("equal vectors: %g", e)
	}
	if e := relErr64([]float64{1}, []float64{1, 2}); !math.IsInf(e, 1) {
		t.Errorf("length mismatch: %g, want +Inf", e)
	}
	if e := relErr64([]float64{math.NaN()}, []float64{1}); !math.IsInf(e, 1) {
		t.Errorf("NaN: %g, want +Inf", e)
	}
}
