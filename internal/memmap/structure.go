// Structure, what carve learns about the memory behind the L2 from the
// first bytes of a pool (its slices and the groups that share DRAM), every
// line of a pool labelled with its group, and the groups split into two
// colours.

package memmap

import (
	"fmt"
	"sort"

	"github.com/carve-gpu/carve/internal/cuda"
)

// Structure is what carve learns from the first bytes of a pool about the
// memory behind the L2: its slices (classes of lines that wait on the
// same slice) and which slices share DRAM (groups).
type Structure struct {
	Classes      Classes     `json:"classes"`
	Interference [][]float64 `json:"interference"` // Interference's M
	Group        []int       `json:"group_of_class"`
	Groups       int         `json:"groups"`
}

// GroupSizes is how many candidates of the learnt region each group holds.
func (s Structure) GroupSizes() []int {
	n := make([]int, s.Groups)
	for k, size := range s.Classes.Sizes {
		n[s.Group[k]] += size
	}
	return n
}

// Learn finds the classes among the lines of pool's first bytes and the
// groups among the classes.
func (p *Probe) Learn(pool cuda.Pages, bytes int) (Structure, error) {
	if bytes <= 0 || bytes > pool.Size*pool.Count {
		return Structure{}, fmt.Errorf("learning from %d bytes of a %d-byte pool", bytes, pool.Size*pool.Count)
	}
	n := bytes / LineBytes
	time, free, err := p.Timer(pool, Offsets(n, LineBytes), 4)
	if err != nil {
		return Structure{}, err
	}
	defer free()
	c, err := FindClasses(n, LineBytes, pool.Size, time, 256)
	if err != nil {
		return Structure{}, err
	}
	if len(c.Refs) < 2 {
		return Structure{}, fmt.Errorf("hammering single lines found %d class of lines", len(c.Refs))
	}
	m, err := Interference(c, time)
	if err != nil {
		return Structure{}, err
	}
	s := Structure{Classes: c, Interference: m, Group: Groups(m)}
	for _, g := range s.Group {
		s.Groups = max(s.Groups, g+1)
	}
	return s, nil
}

// GroupLines labels every line of pool with the group of its class (-1:
// undecided): one chunk of grain bytes (the classes' grain) at a time is
// timed against each class's line hammered, as LabelPool does.
func (p *Probe) GroupLines(pool cuda.Pages, s Structure, grain int, progress func(done, total int)) ([]int, error) {
	if grain < LineBytes || grain%LineBytes != 0 || pool.Size%grain != 0 {
		return nil, fmt.Errorf("grain of %d bytes: want whole lines dividing the page", grain)
	}
	n := pool.Size * pool.Count / grain
	// one load each: a slice's own hammer slows it some 30 times, and the
	// label is the best of every slice's run
	time, free, err := p.Timer(pool, Offsets(n, grain), 1)
	if err != nil {
		return nil, err
	}
	defer free()
	label, err := LabelPool(s.Classes.Refs, n, time, progress)
	if err != nil {
		return nil, err
	}
	per := grain / LineBytes
	lines := make([]int, n*per)
	for i, l := range label {
		g := -1
		if l >= 0 {
			g = s.Group[l]
		}
		for j := range per {
			lines[i*per+j] = g
		}
	}
	return lines, nil
}

// SplitGroups gives each group a colour, 0 or 1, so that the two colours
// hold as nearly equal shares of memory as whole groups allow (largest
// groups first, each to the colour with less so far).
func SplitGroups(sizes []int) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sizes[order[a]] > sizes[order[b]] })
	colour := make([]int, len(sizes))
	var sum [2]int
	for _, g := range order {
		c := 0
		if sum[1] < sum[0] {
			c = 1
		}
		colour[g] = c
		sum[c] += sizes[g]
	}
	return colour
}
