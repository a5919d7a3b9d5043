// The isolation suite (after FGPU's Table I): Workload, each app's buffers
// and run at its benchmark and check sizes, the CPU references, and the
// suite timed and checked.

package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/topo"
)

// A Workload is a benchmark program with its input on the GPU: Iterate runs
// it once (all of its kernels) and returns the time in ms.
type Workload interface {
	Iterate() (float64, error)
}

// The isolation suite, after FGPU's Table I: matrix multiply (mm), sort
// (sn, a bitonic network), vector add (va), scalar product (sp), fast Walsh
// transform (fwt) and a CFD-like stencil (cfd).
var (
	SuiteApps   = []string{"mm", "sn", "va", "sp", "fwt", "cfd"}
	Interferers = []string{"mm", "fwt", "va"}
)

// appSizes are the suite's sizes for timing and for the CPU check.
var appSizes = map[string]struct{ bench, check int }{
	"mm":  {2048, 128},        // n x n floats
	"sn":  {1 << 20, 1 << 12}, // keys, a power of two >= 256
	"va":  {1 << 26, 1003},    // floats per vector
	"sp":  {1 << 17, 1000},    // floats per vector pair; 512 or 7 pairs
	"fwt": {1 << 24, 1 << 10}, // floats, a power of two
	"cfd": {4096, 67},         // grid side (h = side - side/3), 8 or 3 steps
}

// App is one program of the suite at one size.
type App struct {
	s      *Session
	name   string
	kernel string                    // the CUDA function it launches
	run    func() error              // enqueues the app's kernels on s.stream
	out    func() ([]float64, error) // its output, for the CPU check
	want   func() []float64          // the CPU reference of out after one run
	tol    float64                   // largest relative error accepted
}

// Name is the app's short name.
func (a *App) Name() string { return a.name }

// Kernel is the name of the CUDA function the app launches.
func (a *App) Kernel() string { return a.kernel }

// function looks the app's kernel up in its session.
func (a *App) function(kernel string) (cuda.Function, error) {
	a.kernel = kernel
	return a.s.function(kernel)
}

// Iterate runs the app once and returns its time in ms.
func (a *App) Iterate() (float64, error) { return a.s.Timed(nil, a.run) }

// sizes finds an app's sizes in the isolation or the prediction suite.
func sizes(name string) (bench, check int, err error) {
	sz, ok := appSizes[name]
	if !ok {
		sz, ok = predictSizes[name]
	}
	if !ok {
		return 0, 0, fmt.Errorf("unknown app %q: want one of %v or %v", name, SuiteApps, PredictKernels)
	}
	return sz.bench, sz.check, nil
}

// NewApp prepares app name (of either suite) at its benchmark size in s.
func NewApp(s *Session, name string) (*App, error) {
	size, _, err := sizes(name)
	if err != nil {
		return nil, err
	}
	return newApp(s, name, size)
}

// CheckApp runs app name once at its small size and compares its output
// with the CPU reference.
func CheckApp(s *Session, name string) error {
	_, size, err := sizes(name)
	if err != nil {
		return err
	}
	a, err := newApp(s, name, size)
	if err != nil {
		return err
	}
	if _, err := a.Iterate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	got, err := a.out()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if e := relErr64(got, a.want()); e > a.tol {
		return fmt.Errorf("%s: relative error %g against the CPU (want <= %g)", name, e, a.tol)
	}
	return nil
}

func relErr64(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var num, den float64
	for i := range want {
		d := got[i] - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if r := math.Sqrt(num / den); !math.IsNaN(r) {
		return r
	}
	return math.Inf(1)
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	return x
}

func widen[T float32 | uint32](x []T) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func download[T float32 | uint32](p cuda.DevPtr, n int) ([]float64, error) {
	x := make([]T, n)
	if err := cuda.Download(x, p); err != nil {
		return nil, err
	}
	return widen(x), nil
}

func ptrs(args ...any) []unsafe.Pointer {
	out := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case *uint64:
			out[i] = unsafe.Pointer(v)
		case *int32:
			out[i] = unsafe.Pointer(v)
		case *uint32:
			out[i] = unsafe.Pointer(v)
		case *float32:
			out[i] = unsafe.Pointer(v)
		default:
			panic(fmt.Sprintf("kernel argument of type %T", a))
		}
	}
	return out
}

func grid1(blocks uint32) [3]uint32 { return [3]uint32{blocks, 1, 1} }

// streamBlocks is the grid of the grid-stride kernels: enough blocks of 256
// threads to fill every SM several times, fewer for small inputs.
func streamBlocks(n uint64) uint32 { return uint32(min(4096, (n+255)/256)) }

func newApp(s *Session, name string, size int) (*App, error) {
	r := rand.New(rand.NewPCG(uint64(size), 3))
	a := &App{s: s, name: name, tol: 1e-5}
	if b, ok := predictBuilders[name]; ok {
		return a, b(a, r, size)
	}
	kernel := map[string]string{"mm": "sgemm", "sn": "bitonic_step", "va": "vadd", "vadd": "vadd",
		"sp": "scalar_prod", "fwt": "fwt_step", "cfd": "stencil5"}[name]
	fn, err := a.function(kernel)
	if err != nil {
		return nil, err
	}
	block := [3]uint32{256, 1, 1}
	switch kernel {
	case "sgemm":
		g, err := NewGEMM(s, size)
		if err != nil {
			return nil, err
		}
		ha, hb := randFloats(r, size*size), randFloats(r, size*size)
		if err := cuda.Upload(g.a, ha); err != nil {
			return nil, err
		}
		if err := cuda.Upload(g.b, hb); err != nil {
			return nil, err
		}
		n := int32(size)
		pa, pb, pc := uint64(g.a), uint64(g.b), uint64(g.c)
		a.run = func() error {
			return s.launch(fn, [3]uint32{uint32(size / 64), uint32(size / 64), 1}, [3]uint32{16, 16, 1}, ptrs(&n, &pa, &pb, &pc)...)
		}
		a.out = func() ([]float64, error) { return download[float32](g.c, size*size) }
		a.want = func() []float64 { return MulCPU(size, ha, hb) }
	case "bitonic_step":
		if size < 256 || size&(size-1) != 0 {
			return nil, fmt.Errorf("sort of %d keys: want a power of two >= 256", size)
		}
		keys := make([]uint32, size)
		for i := range keys {
			keys[i] = r.Uint32()
		}
		d, err := cuda.Copy(keys)
		if err != nil {
			return nil, err
		}
		p := uint64(d)
		a.run = func() error {
			for k := uint32(2); k <= uint32(size); k <<= 1 {
				for j := k >> 1; j > 0; j >>= 1 {
					if err := s.launch(fn, grid1(uint32(size/256)), block, ptrs(&p, &j, &k)...); err != nil {
						return err
					}
				}
			}
			return nil
		}
		a.out = func() ([]float64, error) { return download[uint32](d, size) }
		a.want = func() []float64 { return widen(BitonicCPU(keys)) }
		a.tol = 0
	case "vadd":
		x, y := randFloats(r, size), randFloats(r, size)
		var dx, dy, dz cuda.DevPtr
		if dx, err = cuda.Copy(x); err != nil {
			return nil, err
		}
		if dy, err = cuda.Copy(y); err != nil {
			return nil, err
		}
		if dz, err = cuda.Alloc(4 * size); err != nil {
			return nil, err
		}
		px, py, pz, n := uint64(dx), uint64(dy), uint64(dz), uint64(size)
		a.run = func() error { return s.launch(fn, grid1(streamBlocks(n)), block, ptrs(&px, &py, &pz, &n)...) }
		a.out = func() ([]float64, error) { return download[float32](dz, size) }
		a.want = func() []float64 {
			z := make([]float64, size)
			for i := range z {
				z[i] = float64(x[i] + y[i])
			}
			return z
		}
	case "scalar_prod":
		vecs := 512
		if size < 1<<16 {
			vecs = 7
		}
		x, y := randFloats(r, vecs*size), randFloats(r, vecs*size)
		var dx, dy, dz cuda.DevPtr
		if dx, err = cuda.Copy(x); err != nil {
			return nil, err
		}
		if dy, err = cuda.Copy(y); err != nil {
			return nil, err
		}
		if dz, err = cuda.Alloc(4 * vecs); err != nil {
			return nil, err
		}
		px, py, pz, n := uint64(dx), uint64(dy), uint64(dz), int32(size)
		a.run = func() error { return s.launch(fn, grid1(uint32(vecs)), block, ptrs(&px, &py, &pz, &n)...) }
		a.out = func() ([]float64, error) { return download[float32](dz, vecs) }
		a.want = func() []float64 { return ScalarProdCPU(x, y, size) }
	case "fwt_step":
		if size < 2 || size&(size-1) != 0 {
			return nil, fmt.Errorf("the Walsh transform of %d values: want a power of two", size)
		}
		x := randFloats(r, size)
		d, err := cuda.Copy(x)
		if err != nil {
			return nil, err
		}
		p, n := uint64(d), uint64(size)
		a.run = func() error {
			for half := uint64(1); half < n; half <<= 1 {
				if err := s.launch(fn, grid1(streamBlocks(n/2)), block, ptrs(&p, &n, &half)...); err != nil {
					return err
				}
			}
			return nil
		}
		a.out = func() ([]float64, error) { return download[float32](d, size) }
		a.want = func() []float64 { return WalshCPU(widen(x)) }
	case "stencil5":
		w, h := size, size-size/3
		steps := 8
		if size < 1024 {
			steps = 3
		}
		x := randFloats(r, w*h)
		var din, dout cuda.DevPtr
		if din, err = cuda.Copy(x); err != nil {
			return nil, err
		}
		if dout, err = cuda.Alloc(4 * w * h); err != nil {
			return nil, err
		}
		pin, pout, w32, h32 := uint64(din), uint64(dout), int32(w), int32(h)
		g := [3]uint32{uint32((w + 15) / 16), uint32((h + 15) / 16), 1}
		a.run = func() error {
			for i := range steps {
				src, dst := &pin, &pout
				if i%2 == 1 {
					src, dst = &pout, &pin
				}
				if err := s.launch(fn, g, [3]uint32{16, 16, 1}, ptrs(src, dst, &w32, &h32)...); err != nil {
					return err
				}
			}
			return nil
		}
		last := dout
		if steps%2 == 0 {
			last = din
		}
		a.out = func() ([]float64, error) { return download[float32](last, w*h) }
		a.want = func() []float64 { return widen(StencilCPU(x, w, h, steps)) }
	}
	return a, nil
}

// BitonicCPU sorts keys ascending through the same network as the
// bitonic_step kernel (len(keys) a power of two).
func BitonicCPU(keys []uint32) []uint32 {
	a := slices.Clone(keys)
	n := uint32(len(a))
	for k := uint32(2); k <= n; k <<= 1 {
		for j := k >> 1; j > 0; j >>= 1 {
			for i := range n {
				p := i ^ j
				if p <= i {
					continue
				}
				up := i&k == 0
				if (up && a[i] > a[p]) || (!up && a[i] < a[p]) {
					a[i], a[p] = a[p], a[i]
				}
			}
		}
	}
	return a
}

// ScalarProdCPU is the float64 reference of scalar_prod.
func ScalarProdCPU(x, y []float32, n int) []float64 {
	out := make([]float64, len(x)/n)
	for v := range out {
		for i := v * n; i < (v+1)*n; i++ {
			out[v] += float64(x[i]) * float64(y[i])
		}
	}
	return out
}

// WalshCPU is the orthonormal fast Walsh-Hadamard transform (natural
// order) in float64, the reference of fwt_step's log2(n) stages.
func WalshCPU(x []float64) []float64 {
	a := slices.Clone(x)
	r := 1 / math.Sqrt2
	for half := 1; half < len(a); half <<= 1 {
		for i := 0; i < len(a); i += 2 * half {
			for j := i; j < i+half; j++ {
				u, v := a[j], a[j+half]
				a[j], a[j+half] = (u+v)*r, (u-v)*r
			}
		}
	}
	return a
}

// StencilCPU runs steps of stencil5 over a w x h grid with the kernel's
// float32 rounding at every operation.
func StencilCPU(x []float32, w, h, steps int) []float32 {
	in, out := slices.Clone(x), make([]float32, len(x))
	for range steps {
		for y := range h {
			for c := range w {
				i := y*w + c
				if c == 0 || y == 0 || c == w-1 || y == h-1 {
					out[i] = in[i]
					continue
				}
				s := float32(float32(float32(float32(in[i]+in[i-1])+in[i+1])+in[i-w]) + in[i+w])
				out[i] = float32(s * 0.2)
			}
		}
		in, out = out, in
	}
	return in
}

// Time runs the app once under mask (nil: none) and returns its time in ms.
func (a *App) Time(mask *topo.Disable) (float64, error) { return a.s.Timed(mask, a.run) }

// SuiteSamples prepares every app of the suite in s, then times each reps
// times after one warm-up run. It returns the times (ms) by app.
func SuiteSamples(s *Session, reps int) (map[string][]float64, error) {
	apps := make([]*App, len(SuiteApps))
	for i, name := range SuiteApps {
		a, err := NewApp(s, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		apps[i] = a
	}
	out := make(map[string][]float64, len(apps))
	for _, a := range apps {
		ms := make([]float64, 0, reps)
		for i := 0; i <= reps; i++ {
			v, err := a.Iterate()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.name, err)
			}
			if i > 0 {
				ms = append(ms, v)
			}
		}
		out[a.name] = ms
	}
	return out, nil
}

// CheckSuite checks every app against its CPU reference.
func CheckSuite(s *Session) error {
	for _, app := range SuiteApps {
		if err := CheckApp(s, app); err != nil {
			return err
		}
	}
	return nil
}

// OpenApp prepares one app of carve's suites in a session of its own on
// device ordinal.
func OpenApp(ordinal int, name string) (*App, error) {
	s, err := Open(ordinal)
	if err != nil {
		return nil, err
	}
	return NewApp(s, name)
}
