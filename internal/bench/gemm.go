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

// Session holds carve's benchmark kernels loaded in this process, a stream,
// timing events and carve's own launch hook, through which runs take masks.
// Its methods must run on the OS thread that called Open.
type Session struct {
	mod    cuda.Module
	stream cuda.Stream
	hook   *hook.Hook
	start  cuda.Event
	end    cuda.Event
}

// Open loads the benchmark kernels on device ordinal.
func Open(ordinal int) (*Session, error) {
	if _, _, err := cuda.OpenPrimary(ordinal); err != nil {
		return nil, err
	}
	s := &Session{}
	src, err := kernels.PTX("bench")
	if err != nil {
		return nil, err
	}
	if s.mod, err = cuda.LoadPTX(src); err != nil {
		return nil, fmt.Errorf("loading the benchmark kernels: %w", err)
	}
	if s.stream, err = cuda.NewStream(); err != nil {
		return nil, err
	}
	if s.start, err = cuda.NewEvent(); err != nil {
		return nil, err
	}
	s.end, err = cuda.NewEvent()
	return s, err
}

// Run launches l on the session's stream under mask (nil: none), waits for
// it and returns its time in ms.
//
// carve's hook is installed on the first masked run only: a process that
// runs under libcarve.so (a benchmark worker started with carve run) has the
// driver's one launch-callback subscription taken already, and needs none.
func (s *Session) Run(fn cuda.Function, l cuda.Launch, mask *topo.Mask) (float64, error) {
	if mask != nil {
		if s.hook == nil {
			h, err := hook.Install()
			if err != nil {
				return 0, err
			}
			s.hook = h
		}
		m := [4]uint32(*mask)
		s.hook.SetMask(&m)
		defer s.hook.SetMask(nil)
	}
	l.Stream = s.stream
	if err := s.start.Record(s.stream); err != nil {
		return 0, err
	}
	if err := fn.Launch(l); err != nil {
		return 0, err
	}
	if mask != nil {
		if v := s.hook.Unsupported(); v != 0 {
			return 0, fmt.Errorf("launch descriptor version %#x is not supported", v)
		}
	}
	if err := s.end.Record(s.stream); err != nil {
		return 0, err
	}
	if err := s.end.Synchronize(); err != nil {
		return 0, err
	}
	return s.end.Since(s.start)
}

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

// NewGEMM loads the kernel on device ordinal and allocates n x n matrices
// filled with random values (n a multiple of 64).
func NewGEMM(ordinal, n int) (*GEMM, error) {
	if n <= 0 || n%64 != 0 {
		return nil, fmt.Errorf("matrix size %d: want a positive multiple of 64", n)
	}
	s, err := Open(ordinal)
	if err != nil {
		return nil, err
	}
	g := &GEMM{Session: s, N: n}
	if g.fn, err = s.mod.Function("sgemm"); err != nil {
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

// Samples times reps runs under mask after one warm-up run (ms).
func (g *GEMM) Samples(mask *topo.Mask, reps int) ([]float64, error) {
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
func (g *GEMM) Time(mask *topo.Mask) (float64, error) {
	return g.run(g.N, g.a, g.b, g.c, mask)
}

func (g *GEMM) run(n int, a, b, c cuda.DevPtr, mask *topo.Mask) (float64, error) {
	n32 := int32(n)
	pa, pb, pc := uint64(a), uint64(b), uint64(c)
	return g.Run(g.fn, cuda.Launch{
		Grid: [3]uint32{uint32(n / 64), uint32(n / 64), 1}, Block: [3]uint32{16, 16, 1},
		Args: []unsafe.Pointer{unsafe.Pointer(&n32), unsafe.Pointer(&pa), unsafe.Pointer(&pb), unsafe.Pointer(&pc)},
	}, mask)
}
