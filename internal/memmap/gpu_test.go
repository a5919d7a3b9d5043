// Tests of gpu.go and structure.go on a real GPU: the slices and groups of
// 1 MiB and an eviction set learnt.

package memmap

import (
	"testing"

	"github.com/carve-gpu/carve/internal/gputest"
)

// TestGPULearn learns the slices and groups of 1 MiB and an eviction set
// on the GPU: more than one slice and group, nearly every line decided,
// a class's own lines slowed most by its hammer, and an eviction set
// whose every line is needed.
func TestGPULearn(t *testing.T) {
	gputest.Need(t)
	p, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := p.Pool(64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Learn(pool, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Classes
	t.Logf("%d classes, sizes %v, %d undecided, grain %d B; %d groups %v", len(c.Refs), c.Sizes, c.Undecided, c.CommonRun*c.Grain, s.Groups, s.Group)
	if len(c.Refs) < 2 || s.Groups < 2 {
		t.Errorf("%d classes in %d groups: want several of each", len(c.Refs), s.Groups)
	}
	if c.Undecided*100 > len(c.Label) {
		t.Errorf("%d of %d lines undecided", c.Undecided, len(c.Label))
	}
	for k, row := range s.Interference {
		for j, x := range row {
			if j != k && x > row[k] {
				t.Errorf("hammering class %d slows class %d (%.2f) more than itself (%.2f)", k, j, x, row[k])
			}
		}
	}
	ev := p.Evicted(pool, 0, 500, 3)
	mates, err := EvictionSet(ev, 1<<20, 97<<20, LineBytes, 64)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Essential(ev, 1<<20, mates)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("eviction set of %d lines, %d essential", len(mates), n)
	if len(mates) < 2 || n != len(mates) {
		t.Errorf("eviction set of %d lines, %d essential: want every one needed", len(mates), n)
	}
}
