// Tests of predictsuite.go's CPU references: conv, mvt, pathfinder,
// raytrace and dxtc.

package workload

import (
	"math"
	"slices"
	"testing"
)

func TestConvCPU(t *testing.T) {
	// An impulse at (3, 2) spreads the filter around it, mirrored: the
	// kernel correlates.
	w, h := 7, 5
	in := make([]float32, w*h)
	in[2*w+3] = 1
	f := make([]float32, 25)
	for i := range f {
		f[i] = float32(i + 1)
	}
	out := ConvCPU(in, f, w, h)
	for _, tc := range []struct{ x, y int }{{3, 2}, {1, 0}, {5, 4}, {4, 2}} {
		dx, dy := 3-tc.x, 2-tc.y // the filter tap that reads the impulse
		if want := f[(dy+2)*5+dx+2]; out[tc.y*w+tc.x] != want {
			t.Errorf("out(%d,%d) = %g, want %g", tc.x, tc.y, out[tc.y*w+tc.x], want)
		}
	}
	if out[0] != 0 {
		t.Errorf("out(0,0) = %g, out of the impulse's reach", out[0])
	}
}

func TestMVTCPU(t *testing.T) {
	// [[1 2] [3 4]]: A y1 with y1 = (1, 1) is (3, 7); A^T y2 with y2 = (1, 0) is (1, 2).
	got := MVTCPU([]float32{1, 2, 3, 4}, []float32{1, 1}, []float32{1, 0}, 2)
	if !slices.Equal(got, []float32{3, 7, 1, 2}) {
		t.Errorf("got %v, want [3 7 1 2]", got)
	}
}

func TestPathfinderCPU(t *testing.T) {
	cols := pfStrip // one whole strip
	wall := make([]int32, 2*cols)
	for c := range cols {
		wall[c] = int32(c % 5)
		wall[cols+c] = 1
	}
	got := PathfinderCPU(wall, cols, 2)
	// column 7: min(row0[6..8]) = min(1, 2, 3) = 1, plus 1; column 0 sees
	// no left neighbour: min(0, 1) + 1; the strip's last column no right one.
	for c, want := range map[int]int32{7: 2, 0: 1, 5: 1, cols - 1: 1 + min(wall[cols-2], wall[cols-1])} {
		if got[c] != want {
			t.Errorf("column %d: %d, want %d", c, got[c], want)
		}
	}
	// two strips do not see each other: column pfStrip's left is a wall.
	wall = make([]int32, 2*2*pfStrip)
	for c := range 2 * pfStrip {
		wall[c] = 9
	}
	wall[pfStrip-1] = 0 // cheap, but in the first strip
	if got := PathfinderCPU(wall, 2*pfStrip, 2); got[pfStrip] != 9 || got[pfStrip-2] != 0 {
		t.Errorf("strip edge: %d (want 9) and %d (want 0)", got[pfStrip], got[pfStrip-2])
	}
}

func TestRaytraceCPU(t *testing.T) {
	// One sphere straight ahead: the centre pixel sees its front, lit from
	// (10, 10, -10) at the normal (0, 0, -1); a corner pixel sees nothing.
	w, h := 32, 32 // pixel (16, 16) looks straight ahead
	img := RaytraceCPU([]float32{0, 0, 5, 1}, w, h)
	lambert := 14 / math.Sqrt(10*10+10*10+14*14)
	if got := float64(img[16*w+16]); math.Abs(got-(0.1+0.9*lambert)) > 1e-3 {
		t.Errorf("centre = %g, want %g", got, 0.1+0.9*lambert)
	}
	if img[0] != 0 {
		t.Errorf("corner = %g, want 0", img[0])
	}
	// A second sphere between the hit (0, 0, 4) and the light casts a shadow.
	img = RaytraceCPU([]float32{0, 0, 5, 1, 1.5, 1.5, 1.9, 0.5}, w, h)
	if img[16*w+16] != 0.1 {
		t.Errorf("shadowed centre = %g, want 0.1", img[16*w+16])
	}
}

func TestDXTCCPU(t *testing.T) {
	// A flat block: both endpoints its colour, every index 0. A block of
	// two colours: they are the endpoints, each pixel indexes its own.
	img := make([]uint32, 16)
	for i := range img {
		img[i] = 0x00ff8040
	}
	out := DXTCCPU(img, 4, 4)
	c := uint32(0x40>>3<<11 | 0x80>>2<<5 | 0xff>>3)
	if out[0] != c|c<<16 || out[1] != 0 {
		t.Errorf("flat block: %#x %#x, want %#x 0", out[0], out[1], c|c<<16)
	}
	for i := 8; i < 16; i++ {
		img[i] = 0
	}
	out = DXTCCPU(img, 4, 4)
	if out[1] != 0x55550000 && out[1] != 0x0000aaaa && out[1] != 0x00005555 && out[1] != 0xaaaa0000 {
		t.Errorf("two-colour block indices %#x: want the halves on two endpoints", out[1])
	}
}
