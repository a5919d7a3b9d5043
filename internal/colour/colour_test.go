// Tests of colour.go: a pool hands out lines of each colour until it is
// used up, never an unknown line, and never changes a table it handed out.

package colour

import (
	"slices"
	"testing"
)

func TestTake(t *testing.T) {
	p := New([]int{0, 1, 1, -1, 0, 1, 0, 0}, 128)
	if p.Free(0) != 4*128 || p.Free(1) != 3*128 {
		t.Fatalf("free %d / %d", p.Free(0), p.Free(1))
	}
	a, err := p.Take(0, 129) // two lines
	if err != nil || !slices.Equal(a, []uint32{0, 4}) {
		t.Errorf("take 129 bytes of colour 0: %v %v", a, err)
	}
	b, err := p.Take(0, 256)
	if err != nil || !slices.Equal(b, []uint32{6, 7}) {
		t.Errorf("next 256 bytes of colour 0: %v %v", b, err)
	}
	if _, err := p.Take(0, 1); err == nil {
		t.Error("colour 0 is used up, yet more was handed out")
	}
	c, _ := p.Take(1, 384)
	if !slices.Equal(c, []uint32{1, 2, 5}) {
		t.Errorf("colour 1: %v (line 3 is unknown and never handed out)", c)
	}
	// a table handed out is not changed by later takes
	a = append(a, 99)
	if !slices.Equal(b, []uint32{6, 7}) || !slices.Equal(a, []uint32{0, 4, 99}) {
		t.Errorf("appending to one table changed another: %v, %v", a, b)
	}
	if _, err := p.Take(1, 1); err == nil {
		t.Error("colour 1 is used up, yet more was handed out")
	}
	if _, err := p.Take(0, 0); err == nil {
		t.Error("a take of 0 bytes succeeded")
	}
}
