package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/hook"
	"github.com/carve-gpu/carve/internal/kernels"
	"github.com/carve-gpu/carve/internal/topo"
)

// GEMM runs carve's sgemm kernel in this process, under masks set through
// carve's own launch hook. Its methods must run on the OS thread that called
// NewGEMM.
type GEMM struct {
	N       int
	fn      cuda.Function
	stream  cuda.Stream
	a, b, c cuda.DevPtr
	hook    *hook.Hook
	start   cuda.Event
	end     cuda.Event
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

// NewGEMM loads the kernel on device ordinal and allocates n x n matrices
// filled with random values (n a multiple of 64).
func NewGEMM(ordinal, n int) (*GEMM, error) {
	if n <= 0 || n%64 != 0 {
		return nil, fmt.Errorf("matrix size %d: want a positive multiple of 64", n)
	}
	_, _, err := cuda.OpenPrimary(ordinal)
	if err != nil {
		return nil, err
	}
	g := &GEMM{N: n}
	if g.hook, err = hook.Install(); err != nil {
		return nil, err
	}
	src, err := kernels.PTX("bench")
	if err != nil {
		return nil, err
	}
	mod, err := cuda.LoadPTX(src)
	if err != nil {
		return nil, fmt.Errorf("loading the benchmark kernels: %w", err)
	}
	if g.fn, err = mod.Function("sgemm"); err != nil {
		return nil, err
	}
	if g.stream, err = cuda.NewStream(); err != nil {
		return nil, err
	}
	if g.start, err = cuda.NewEvent(); err != nil {
		return nil, err
	}
	if g.end, err = cuda.NewEvent(); err != nil {
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
		if err := p.CopyFloats(host); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Check multiplies fresh random n x n matrices on the GPU (under mask, nil
// for none) and returns the relative error against MulCPU.
func (g *GEMM) Check(n int, mask *topo.Mask) (float64, error) {
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
	if err := da.CopyFloats(a); err != nil {
		return 0, err
	}
	if err := db.CopyFloats(b); err != nil {
		return 0, err
	}
	if err := dc.Fill32(0x7fc00000, n*n); err != nil { // NaN: unwritten outputs fail
		return 0, err
	}
	if _, err := g.run(n, da, db, dc, mask); err != nil {
		return 0, err
	}
	got := make([]float32, n*n)
	if err := dc.CopyFloatsToHost(got); err != nil {
		return 0, err
	}
	return RelErr(got, MulCPU(n, a, b)), nil
}

// Time runs the N x N product once under mask and returns its time in ms.
func (g *GEMM) Time(mask *topo.Mask) (float64, error) {
	return g.run(g.N, g.a, g.b, g.c, mask)
}

func (g *GEMM) run(n int, a, b, c cuda.DevPtr, mask *topo.Mask) (float64, error) {
	if mask != nil {
		m := [4]uint32(*mask)
		g.hook.SetMask(&m)
	}
	defer g.hook.SetMask(nil)
	n32 := int32(n)
	pa, pb, pc := uint64(a), uint64(b), uint64(c)
	if err := g.start.Record(g.stream); err != nil {
		return 0, err
	}
	err := g.fn.Launch(cuda.Launch{
		Grid: [3]uint32{uint32(n / 64), uint32(n / 64), 1}, Block: [3]uint32{16, 16, 1}, Stream: g.stream,
		Args: []unsafe.Pointer{unsafe.Pointer(&n32), unsafe.Pointer(&pa), unsafe.Pointer(&pb), unsafe.Pointer(&pc)},
	})
	if err != nil {
		return 0, err
	}
	if v := g.hook.Unsupported(); mask != nil && v != 0 {
		return 0, fmt.Errorf("launch descriptor version %#x is not supported", v)
	}
	if err := g.end.Record(g.stream); err != nil {
		return 0, err
	}
	if err := g.end.Synchronize(); err != nil {
		return 0, err
	}
	return g.end.Since(g.start)
}
