// The latency model's suite (after Table 2 of the memory-aware latency
// prediction paper): each app's buffers and run, and the CPU reference it
// is checked against.

package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/carve-gpu/carve/internal/cuda"
)

// PredictKernels is the latency model's suite, after Table 2 of the
// memory-aware latency prediction paper: memory-intensive (vadd, saxpy,
// copy), hybrid (conv, mvt, pf) and computational (raytrace, dxtc). Each is
// one launch, sized to run 0.3-3 ms on a whole H100.
var PredictKernels = []string{"vadd", "saxpy", "copy", "conv", "mvt", "pf", "raytrace", "dxtc"}

// predictSizes are the suite's sizes for timing and for the CPU check.
var predictSizes = map[string]struct{ bench, check int }{
	"vadd":     {3 << 25, 1003}, // floats per vector
	"saxpy":    {3 << 25, 1003},
	"copy":     {1 << 27, 1003},
	"conv":     {10240, 37},     // image side (height = side - side/5)
	"mvt":      {8192, 67},      // matrix side
	"pf":       {1 << 20, 1000}, // columns; 160 or 9 rows
	"raytrace": {3840, 64},      // image width (height = width * 9/16); 128 or 16 spheres
	"dxtc":     {2048, 16},      // image side, a multiple of 4
}

// builder prepares an app's buffers and fills in its run, out and want.
type builder func(a *App, r *rand.Rand, size int) error

var predictBuilders = map[string]builder{
	"saxpy": buildSaxpy, "copy": buildCopy, "conv": buildConv, "mvt": buildMVT,
	"pf": buildPathfinder, "raytrace": buildRaytrace, "dxtc": buildDXTC,
}

func buildSaxpy(a *App, r *rand.Rand, n int) error {
	fn, err := a.function("saxpy")
	if err != nil {
		return err
	}
	x, y := randFloats(r, n), randFloats(r, n)
	dx, err := cuda.Copy(x)
	if err != nil {
		return err
	}
	dy, err := cuda.Copy(y)
	if err != nil {
		return err
	}
	alpha, px, py, n64 := float32(0.5), uint64(dx), uint64(dy), uint64(n)
	a.run = func() error {
		return a.s.launch(fn, grid1(streamBlocks(n64)), [3]uint32{256, 1, 1}, ptrs(&alpha, &px, &py, &n64)...)
	}
	a.out = func() ([]float64, error) { return download[float32](dy, n) }
	a.want = func() []float64 {
		z := make([]float64, n)
		for i := range z {
			z[i] = float64(alpha*x[i] + y[i])
		}
		return z
	}
	return nil
}

func buildCopy(a *App, r *rand.Rand, n int) error {
	fn, err := a.function("copy")
	if err != nil {
		return err
	}
	x := randFloats(r, n)
	dx, err := cuda.Copy(x)
	if err != nil {
		return err
	}
	dy, err := cuda.Alloc(4 * n)
	if err != nil {
		return err
	}
	px, py, n64 := uint64(dx), uint64(dy), uint64(n)
	a.run = func() error {
		return a.s.launch(fn, grid1(streamBlocks(n64)), [3]uint32{256, 1, 1}, ptrs(&px, &py, &n64)...)
	}
	a.out = func() ([]float64, error) { return download[float32](dy, n) }
	a.want = func() []float64 { return widen(x) }
	a.tol = 0
	return nil
}

func buildConv(a *App, r *rand.Rand, side int) error {
	fn, err := a.function("conv2d")
	if err != nil {
		return err
	}
	w, h := side, side-side/5
	x, f := randFloats(r, w*h), randFloats(r, 25)
	dx, err := cuda.Copy(x)
	if err != nil {
		return err
	}
	df, err := cuda.Copy(f)
	if err != nil {
		return err
	}
	dy, err := cuda.Alloc(4 * w * h)
	if err != nil {
		return err
	}
	px, pf, py, w32, h32 := uint64(dx), uint64(df), uint64(dy), int32(w), int32(h)
	g := [3]uint32{uint32((w + 15) / 16), uint32((h + 15) / 16), 1}
	a.run = func() error { return a.s.launch(fn, g, [3]uint32{16, 16, 1}, ptrs(&px, &pf, &py, &w32, &h32)...) }
	a.out = func() ([]float64, error) { return download[float32](dy, w*h) }
	a.want = func() []float64 { return widen(ConvCPU(x, f, w, h)) }
	a.tol = 0 // same operations in the same order, each rounded
	return nil
}

// ConvCPU is conv2d's reference, with its float32 rounding at every step.
func ConvCPU(in, f []float32, w, h int) []float32 {
	out := make([]float32, w*h)
	for y := range h {
		for x := range w {
			var s float32
			for dy := -2; dy <= 2; dy++ {
				for dx := -2; dx <= 2; dx++ {
					xx, yy := x+dx, y+dy
					var v float32
					if xx >= 0 && xx < w && yy >= 0 && yy < h {
						v = in[yy*w+xx]
					}
					s = float32(s + float32(v*f[(dy+2)*5+dx+2]))
				}
			}
			out[y*w+x] = s
		}
	}
	return out
}

func buildMVT(a *App, r *rand.Rand, n int) error {
	fn, err := a.function("mvt")
	if err != nil {
		return err
	}
	m, y1, y2 := randFloats(r, n*n), randFloats(r, n), randFloats(r, n)
	var dm, d1, d2, dx cuda.DevPtr
	for _, u := range []struct {
		p *cuda.DevPtr
		x []float32
	}{{&dm, m}, {&d1, y1}, {&d2, y2}} {
		if *u.p, err = cuda.Copy(u.x); err != nil {
			return err
		}
	}
	if dx, err = cuda.Alloc(8 * n); err != nil {
		return err
	}
	pm, p1, p2, px1, px2, n32 := uint64(dm), uint64(d1), uint64(d2), uint64(dx), uint64(dx)+uint64(4*n), int32(n)
	a.run = func() error {
		return a.s.launch(fn, grid1(uint32((2*n+127)/128)), [3]uint32{128, 1, 1}, ptrs(&pm, &p1, &p2, &px1, &px2, &n32)...)
	}
	a.out = func() ([]float64, error) { return download[float32](dx, 2*n) }
	a.want = func() []float64 { return widen(MVTCPU(m, y1, y2, n)) }
	a.tol = 0
	return nil
}

// MVTCPU is mvt's reference: x1 = A y1 then x2 = A^T y2, concatenated, with
// float32 rounding at every step in the kernel's order.
func MVTCPU(m, y1, y2 []float32, n int) []float32 {
	out := make([]float32, 2*n)
	for i := range n {
		var s1, s2 float32
		for j := range n {
			s1 = float32(s1 + float32(m[i*n+j]*y1[j]))
			s2 = float32(s2 + float32(m[j*n+i]*y2[j]))
		}
		out[i], out[n+i] = s1, s2
	}
	return out
}

const pfStrip = 256 // pathfinder's block: the width of a strip

func buildPathfinder(a *App, r *rand.Rand, cols int) error {
	fn, err := a.function("pathfinder")
	if err != nil {
		return err
	}
	rows := 160
	if cols < 1<<16 {
		rows = 9
	}
	wall := make([]int32, rows*cols)
	for i := range wall {
		wall[i] = int32(r.IntN(10))
	}
	dw, err := cuda.Copy(wall)
	if err != nil {
		return err
	}
	do, err := cuda.Alloc(4 * cols)
	if err != nil {
		return err
	}
	pw, po, c32, r32 := uint64(dw), uint64(do), int32(cols), int32(rows)
	a.run = func() error {
		return fn.Launch(cuda.Launch{Grid: grid1(uint32((cols + pfStrip - 1) / pfStrip)), Block: [3]uint32{pfStrip, 1, 1},
			Shared: 4 * pfStrip, Stream: a.s.stream, Args: ptrs(&pw, &po, &c32, &r32)})
	}
	a.out = func() ([]float64, error) {
		got := make([]int32, cols)
		if err := cuda.Download(got, do); err != nil {
			return nil, err
		}
		return widenInts(got), nil
	}
	a.want = func() []float64 { return widenInts(PathfinderCPU(wall, cols, rows)) }
	a.tol = 0
	return nil
}

func widenInts(x []int32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// PathfinderCPU is pathfinder's reference: each strip of pfStrip columns
// on its own, columns past the grid's edge costing 0.
func PathfinderCPU(wall []int32, cols, rows int) []int32 {
	strips := (cols + pfStrip - 1) / pfStrip
	cost := make([]int32, strips*pfStrip)
	at := func(r, c int) int32 {
		if c < cols {
			return wall[r*cols+c]
		}
		return 0
	}
	for c := range cost {
		cost[c] = at(0, c)
	}
	next := make([]int32, len(cost))
	for r := 1; r < rows; r++ {
		for c := range cost {
			t := c % pfStrip
			best := cost[c]
			if t > 0 {
				best = min(best, cost[c-1])
			}
			if t < pfStrip-1 {
				best = min(best, cost[c+1])
			}
			next[c] = 0
			if c < cols {
				next[c] = best + at(r, c)
			}
		}
		cost, next = next, cost
	}
	return cost[:cols]
}

func buildRaytrace(a *App, r *rand.Rand, w int) error {
	fn, err := a.function("raytrace")
	if err != nil {
		return err
	}
	h, ns := w*9/16, 128
	if w < 512 {
		ns = 16
	}
	sph := make([]float32, 4*ns)
	for i := range ns {
		sph[4*i] = r.Float32()*8 - 4
		sph[4*i+1] = r.Float32()*5 - 2.5
		sph[4*i+2] = r.Float32()*10 + 4
		sph[4*i+3] = r.Float32()*0.6 + 0.2
	}
	ds, err := cuda.Copy(sph)
	if err != nil {
		return err
	}
	di, err := cuda.Alloc(4 * w * h)
	if err != nil {
		return err
	}
	ps, pi, ns32, w32, h32 := uint64(ds), uint64(di), int32(ns), int32(w), int32(h)
	g := [3]uint32{uint32((w + 15) / 16), uint32((h + 15) / 16), 1}
	a.run = func() error { return a.s.launch(fn, g, [3]uint32{16, 16, 1}, ptrs(&ps, &ns32, &pi, &w32, &h32)...) }
	a.out = func() ([]float64, error) { return download[float32](di, w*h) }
	a.want = func() []float64 { return widen(RaytraceCPU(sph, w, h)) }
	a.tol = 1e-3 // a reciprocal square root may round apart in a few pixels
	return nil
}

// RaytraceCPU is raytrace's reference, each operation rounded to float32
// as the kernel's _rn intrinsics round it.
func RaytraceCPU(sph []float32, w, h int) []float32 {
	ns := len(sph) / 4
	sqrt := func(x float32) float32 { return float32(math.Sqrt(float64(x))) }
	rsqrt := func(x float32) float32 { return float32(1 / math.Sqrt(float64(x))) }
	img := make([]float32, w*h)
	for py := range h {
		for px := range w {
			dx := float32(float32(2*float32(px))/float32(w)) - 1
			dy := float32(float32(2*float32(py))/float32(h)) - 1
			inv := rsqrt(float32(float32(dx*dx)+float32(dy*dy)) + 1)
			dx, dy = dx*inv, dy*inv
			dz := inv
			best, hit := float32(1e30), -1
			for i := range ns {
				sx, sy, sz, sr := sph[4*i], sph[4*i+1], sph[4*i+2], sph[4*i+3]
				b := float32(float32(dx*sx)+float32(dy*sy)) + float32(dz*sz)
				cc := float32(float32(float32(sx*sx)+float32(sy*sy))+float32(sz*sz)) - float32(sr*sr)
				if disc := float32(b*b) - cc; disc > 0 {
					if t := b - sqrt(disc); t > 1e-3 && t < best {
						best, hit = t, i
					}
				}
			}
			var shade float32
			if hit >= 0 {
				sx, sy, sz, sr := sph[4*hit], sph[4*hit+1], sph[4*hit+2], sph[4*hit+3]
				hx, hy, hz := best*dx, best*dy, best*dz
				nx, ny, nz := (hx-sx)/sr, (hy-sy)/sr, (hz-sz)/sr
				lx, ly, lz := 10-hx, 10-hy, -10-hz
				li := rsqrt(float32(float32(lx*lx)+float32(ly*ly)) + float32(lz*lz))
				lx, ly, lz = lx*li, ly*li, lz*li
				lambert := float32(float32(nx*lx)+float32(ny*ly)) + float32(nz*lz)
				lit := lambert > 0
				for i := 0; lit && i < ns; i++ {
					if i == hit {
						continue
					}
					cx, cy, cz := sph[4*i]-hx, sph[4*i+1]-hy, sph[4*i+2]-hz
					b := float32(float32(lx*cx)+float32(ly*cy)) + float32(lz*cz)
					cc := float32(float32(float32(cx*cx)+float32(cy*cy))+float32(cz*cz)) - float32(sph[4*i+3]*sph[4*i+3])
					if b > 0 && float32(b*b)-cc > 0 {
						lit = false
					}
				}
				shade = 0.1
				if lit {
					shade = 0.1 + float32(0.9*lambert)
				}
			}
			img[py*w+px] = shade
		}
	}
	return img
}

func buildDXTC(a *App, r *rand.Rand, side int) error {
	fn, err := a.function("dxtc")
	if err != nil {
		return err
	}
	if side%4 != 0 {
		return fmt.Errorf("dxtc image side %d: want a multiple of 4", side)
	}
	img := make([]uint32, side*side)
	for i := range img {
		// smooth gradients with noise, so that blocks have a structure
		x, y := i%side, i/side
		img[i] = uint32((x*255/side+r.IntN(16))&255) | uint32((y*255/side+r.IntN(16))&255)<<8 | uint32(r.IntN(256))<<16
	}
	di, err := cuda.Copy(img)
	if err != nil {
		return err
	}
	blocks := (side / 4) * (side / 4)
	do, err := cuda.Alloc(8 * blocks)
	if err != nil {
		return err
	}
	pi, po, s32 := uint64(di), uint64(do), int32(side)
	a.run = func() error {
		return a.s.launch(fn, grid1(uint32((blocks+127)/128)), [3]uint32{128, 1, 1}, ptrs(&pi, &po, &s32, &s32)...)
	}
	a.out = func() ([]float64, error) { return download[uint32](do, 2*blocks) }
	a.want = func() []float64 { return widen(DXTCCPU(img, side, side)) }
	a.tol = 0
	return nil
}

// DXTCCPU is dxtc's reference.
func DXTCCPU(img []uint32, w, h int) []uint32 {
	errOf := func(a, b uint32) int {
		dr, dg, db := int(a&255)-int(b&255), int(a>>8&255)-int(b>>8&255), int(a>>16&255)-int(b>>16&255)
		return dr*dr + dg*dg + db*db
	}
	mix := func(a, b uint32, wa, wb uint32) uint32 {
		return ((a&255)*wa+(b&255)*wb)/3 | (((a>>8&255)*wa+(b>>8&255)*wb)/3)<<8 | (((a>>16&255)*wa+(b>>16&255)*wb)/3)<<16
	}
	to565 := func(c uint32) uint32 { return (c&255)>>3<<11 | (c>>8&255)>>2<<5 | (c>>16&255)>>3 }
	bw := w / 4
	out := make([]uint32, 2*bw*(h/4))
	var px [16]uint32
	for b := range bw * (h / 4) {
		bx, by := b%bw, b/bw
		for i := range 16 {
			px[i] = img[(by*4+i/4)*w+bx*4+i%4]
		}
		palette := func(i, j int) [4]uint32 {
			return [4]uint32{px[i], px[j], mix(px[i], px[j], 2, 1), mix(px[i], px[j], 1, 2)}
		}
		bestErr, bi, bj := math.MaxInt32, 0, 0
		for i := range 16 {
			for j := i; j < 16; j++ {
				pal, e := palette(i, j), 0
				for k := range 16 {
					e += slices.Min([]int{errOf(px[k], pal[0]), errOf(px[k], pal[1]), errOf(px[k], pal[2]), errOf(px[k], pal[3])})
				}
				if e < bestErr {
					bestErr, bi, bj = e, i, j
				}
			}
		}
		pal := palette(bi, bj)
		var idx uint32
		for k := range 16 {
			m, q := errOf(px[k], pal[0]), 0
			for p := 1; p < 4; p++ {
				if e := errOf(px[k], pal[p]); e < m {
					m, q = e, p
				}
			}
			idx |= uint32(q) << (2 * k)
		}
		out[2*b] = to565(pal[0]) | to565(pal[1])<<16
		out[2*b+1] = idx
	}
	return out
}
