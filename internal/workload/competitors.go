// The competitor kernels a victim is measured beside: Mandelbrot (compute)
// and random walks (memory), with their CPU references, and NewWorkload,
// which prepares a competitor or an app of the suite by name.

package workload

import (
	"fmt"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
)

// MandelbrotCPU is the reference of the mandelbrot kernel, with the same
// float32 rounding at every step (Go does not fuse these on amd64).
func MandelbrotCPU(w, h, maxIter int) []uint32 {
	out := make([]uint32, w*h)
	for y := range h {
		for x := range w {
			cr := float32(-2) + float32(3)*float32(x)/float32(w)
			ci := float32(-1.5) + float32(3)*float32(y)/float32(h)
			var zr, zi float32
			i := 0
			for ; i < maxIter; i++ {
				zr2, zi2 := float32(zr*zr), float32(zi*zi)
				if float32(zr2+zi2) > 4 {
					break
				}
				t := float32(float32(zr2-zi2) + cr)
				zi = float32(float32(float32(2*zr)*zi) + ci)
				zr = t
			}
			out[y*w+x] = uint32(i)
		}
	}
	return out
}

// RandWalkCPU is the reference of randwalk_init followed by randwalk for
// threads 0..threads-1 (n a power of two).
func RandWalkCPU(n uint64, steps, threads int) []uint32 {
	buf := make([]uint32, n)
	for i := range buf {
		h := uint32(i) * 2654435761
		buf[i] = h ^ (h >> 13)
	}
	out := make([]uint32, threads)
	for t := range threads {
		idx := uint64(uint32(t)*2654435761) & (n - 1)
		for s := range steps {
			idx = (uint64(buf[idx]) ^ idx*40503 ^ uint64(s)) & (n - 1)
		}
		out[t] = uint32(idx)
	}
	return out
}

// Competitor runs one of the two competitor kernels over buffers of its own.
type Competitor struct {
	*Session
	Kind  string // "compute" or "memory"
	fn    cuda.Function
	out   cuda.DevPtr
	buf   cuda.DevPtr
	n     uint64 // randwalk buffer length (uint32 words)
	w, h  int
	iters int
	steps int
}

// Sizes of the competitors: Mandelbrot of 4096 x 4096 pixels at up to 2000
// iterations; random walks over 1 GiB (20x the H100's L2), 256 steps for
// each of 132 x 1024 threads.
const (
	mandelSide  = 4096
	mandelIters = 2000
	walkWords   = 1 << 28
	walkThreads = 132 * 1024
	walkSteps   = 256
)

// NewCompetitor prepares kind ("compute" or "memory") at the given size
// (side of the Mandelbrot image, or words of the walk buffer; 0 picks the
// benchmark's defaults).
func NewCompetitor(s *Session, kind string, size int) (*Competitor, error) {
	c := &Competitor{Session: s, Kind: kind}
	var err error
	switch kind {
	case "compute":
		c.w, c.h, c.iters = mandelSide, mandelSide, mandelIters
		if size > 0 {
			c.w, c.h = size, size
		}
		if c.fn, err = s.function("mandelbrot"); err != nil {
			return nil, err
		}
		c.out, err = cuda.Alloc(4 * c.w * c.h)
		return c, err
	case "memory":
		c.n, c.steps = walkWords, walkSteps
		if size > 0 {
			c.n = uint64(size)
		}
		if c.n&(c.n-1) != 0 {
			return nil, fmt.Errorf("walk buffer of %d words: want a power of two", c.n)
		}
		if c.fn, err = s.function("randwalk"); err != nil {
			return nil, err
		}
		if c.buf, err = cuda.Alloc(int(4 * c.n)); err != nil {
			return nil, err
		}
		if c.out, err = cuda.Alloc(4 * walkThreads); err != nil {
			return nil, err
		}
		init, err := s.function("randwalk_init")
		if err != nil {
			return nil, err
		}
		buf, n := uint64(c.buf), c.n
		_, err = s.Run(init, cuda.Launch{Grid: [3]uint32{1024, 1, 1}, Block: [3]uint32{256, 1, 1},
			Args: []unsafe.Pointer{unsafe.Pointer(&buf), unsafe.Pointer(&n)}}, nil)
		return c, err
	}
	return nil, fmt.Errorf("unknown competitor %q: want compute or memory", kind)
}

// NewWorkload prepares a competitor or interferer by name: compute
// (Mandelbrot), memory (random walks) or an app of the suite.
func NewWorkload(s *Session, name string) (Workload, error) {
	if name == "compute" || name == "memory" {
		return NewCompetitor(s, name, 0)
	}
	return NewApp(s, name)
}

// Iterate runs the competitor kernel once (on all TPCs its process may use).
func (c *Competitor) Iterate() (float64, error) {
	out := uint64(c.out)
	if c.Kind == "compute" {
		w, h, it := int32(c.w), int32(c.h), int32(c.iters)
		return c.Run(c.fn, cuda.Launch{Grid: [3]uint32{uint32((c.w + 15) / 16), uint32((c.h + 15) / 16), 1}, Block: [3]uint32{16, 16, 1},
			Args: []unsafe.Pointer{unsafe.Pointer(&w), unsafe.Pointer(&h), unsafe.Pointer(&it), unsafe.Pointer(&out)}}, nil)
	}
	buf, n, steps := uint64(c.buf), c.n, int32(c.steps)
	return c.Run(c.fn, cuda.Launch{Grid: [3]uint32{walkThreads / 256, 1, 1}, Block: [3]uint32{256, 1, 1},
		Args: []unsafe.Pointer{unsafe.Pointer(&buf), unsafe.Pointer(&n), unsafe.Pointer(&steps), unsafe.Pointer(&out)}}, nil)
}

// Result copies the competitor's output (w*h counts, or one index per thread).
func (c *Competitor) Result() ([]uint32, error) {
	n := walkThreads
	if c.Kind == "compute" {
		n = c.w * c.h
	}
	out := make([]uint32, n)
	return out, cuda.Download(out, c.out)
}
