// Tests of competitors.go's CPU references: Mandelbrot and the random
// walks.

package workload

import "testing"

func TestMandelbrotCPU(t *testing.T) {
	m := MandelbrotCPU(8, 8, 50)
	// the origin column is inside the set; the far left corner escapes at once
	if m[4*8+5] != 50 { // x=5 -> cr=-0.125, y=4 -> ci=0: inside
		t.Errorf("point (-0.125, 0) escaped after %d", m[4*8+5])
	}
	if m[0] > 2 {
		t.Errorf("corner (-2, -1.5) stayed %d iterations", m[0])
	}
}

func TestRandWalkCPU(t *testing.T) {
	a := RandWalkCPU(1<<10, 16, 64)
	b := RandWalkCPU(1<<10, 16, 64)
	c := RandWalkCPU(1<<10, 17, 64)
	same := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("walk not deterministic")
		}
		if a[i] >= 1<<10 {
			t.Fatalf("index %d out of range", a[i])
		}
		if a[i] == c[i] {
			same++
		}
	}
	if same > 8 {
		t.Errorf("one more step changed only %d of 64 walks", 64-same)
	}
}
