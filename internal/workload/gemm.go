// GEMM: N x N float matrices multiplied with carve's sgemm kernel, checked
// against a float64 CPU reference and timed under a TPC mask.

package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/topo"
)

// GEMM multiplies N x N float matrices with carve's sgemm kernel.
type GEMM struct {
	*Session
	N       int
	fn      cuda.Function
	a, b, c cuda.DevPtr
}

// MulCPU is the float64 reference of sgemm for row-major n x n matrices.
func MulCPU(n int, a, b []float32) []float64 {
	c := make([]float64, n*n)
	for i := range n {
		for k := range n {
			aik := float64(a[i*n+k])
			for j := range n {
				c[i*n+j] += aik * float64(b[k*n+j])
			}
		}
	}
	return c
}

// RelErr is ||got - want|| / ||want|| in the Frobenius norm; NaN fails.
func RelErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	r := math.Sqrt(num / den)
	if math.IsNaN(r) {
		return math.Inf(1)
	}
	return r
}

// NewGEMM allocates n x n matrices filled with random values (n a multiple
// of 64) in s.
func NewGEMM(s *Session, n int) (*GEMM, error) {
	if n <= 0 || n%64 != 0 {
		return nil, fmt.Errorf("matrix size %d: want a positive multiple of 64", n)
	}
	g := &GEMM{Session: s, N: n}
	var err error
	if g.fn, err = s.function("sgemm"); err != nil {
		return nil, err
	}
	for _, p := range []*cuda.DevPtr{&g.a, &g.b, &g.c} {
		if *p, err = cuda.Alloc(4 * n * n); err != nil {
			return nil, err
		}
	}
	r := rand.New(rand.NewPCG(uint64(n), 7))
	host := make([]float32, n*n)
	for _, p := range []cuda.DevPtr{g.a, g.b} {
		for i := range host {
			host[i] = r.Float32()*2 - 1
		}
		if err := cuda.Upload(p, host); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Check multiplies fresh random n x n matrices on the GPU (under mask, nil
// for none) and returns the relative error against MulCPU.
func (g *GEMM) Check(n int, mask *topo.Disable) (float64, error) {
	r := rand.New(rand.NewPCG(uint64(n), 11))
	a, b := make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = r.Float32()*2-1, r.Float32()*2-1
	}
	var da, db, dc cuda.DevPtr
	var err error
	for _, p := range []*cuda.DevPtr{&da, &db, &dc} {
		if *p, err = cuda.Alloc(4 * n * n); err != nil {
			return 0, err
		}
		defer p.Free()
	}
	if err := cuda.Upload(da, a); err != nil {
		return 0, err
	}
	if err := cuda.Upload(db, b); err != nil {
		return 0, err
	}
	if err := dc.Fill32(0x7fc00000, n*n); err != nil { // NaN: unwritten outputs fail
		return 0, err
	}
	if _, err := g.run(n, da, db, dc, mask); err != nil {
		return 0, err
	}
	got := make([]float32, n*n)
	if err := cuda.Download(got, dc); err != nil {
		return 0, err
	}
	return RelErr(got, MulCPU(n, a, b)), nil
}

// Samples times reps runs under mask after one warm-up run (ms).
func (g *GEMM) Samples(mask *topo.Disable, reps int) ([]float64, error) {
	ms := make([]float64, 0, reps)
	for i := 0; i <= reps; i++ {
		v, err := g.Time(mask)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			ms = append(ms, v)
		}
	}
	return ms, nil
}

// Time runs the N x N product once under mask and returns its time in ms.
func (g *GEMM) Time(mask *topo.Disable) (float64, error) {
	return g.run(g.N, g.a, g.b, g.c, mask)
}

func (g *GEMM) run(n int, a, b, c cuda.DevPtr, mask *topo.Disable) (float64, error) {
	n32 := int32(n)
	pa, pb, pc := uint64(a), uint64(b), uint64(c)
	return g.Run(g.fn, cuda.Launch{
		Grid: [3]uint32{uint32(n / 64), uint32(n / 64), 1}, Block: [3]uint32{16, 16, 1},
		Args: []unsafe.Pointer{unsafe.Pointer(&n32), unsafe.Pointer(&pa), unsafe.Pointer(&pb), unsafe.Pointer(&pc)},
	}, mask)
}

// Free releases the matrices.
func (g *GEMM) Free() {
	for _, p := range []cuda.DevPtr{g.a, g.b, g.c} {
		p.Free()
	}
}
