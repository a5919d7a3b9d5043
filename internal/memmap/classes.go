// The L2 slices behind a pool's lines, learnt by contention: FindClasses
// hammers one line at a time and gives each candidate the class of the
// hammer that slows it, Interference measures how classes slow each other,
// and Groups joins those that share DRAM.

package memmap

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Timer times a DRAM load of every candidate line of a pool while the rest
// of the GPU loads the hammer lines over and over from DRAM (threads per
// hammering SM); with no hammer lines the candidates are timed alone. The
// GPU's is Probe.Timer; tests give a model of one.
type Timer func(hammer []uint64, threads int) ([]uint32, error)

// Contention signatures. A single line hammered by every thread of half
// the SMs saturates the L2 slice that serves it (its misses merge, so DRAM
// sees little of it): lines of that slice wait about 30 times longer than
// alone and every other line does not. Many distinct lines of one slice,
// hammered, go to DRAM: they slow the slices that share their memory
// controller, which is what colouring must keep apart.
const (
	// SlowFactor: a candidate belongs to a hammered line's slice when its
	// time is at least this many times the run's median. On the H100 the
	// slice's own lines wait 19-30 times longer, and about a sixtieth of
	// the other lines 2-5 times (testdata/h100-slices.json.gz): the factor
	// lies between the two.
	SlowFactor = 8.0
	// lineThreads and classThreads: threads per hammering SM for a single
	// line, and for a class's many lines.
	lineThreads  = 1024
	classThreads = 32
	// classLines: how many of a class's lines its DRAM hammer loads.
	classLines = 512
)

// Classes is what FindClasses learns: the candidates that wait on the same
// L2 slice, by hammering one line of each in turn.
type Classes struct {
	Grain int      `json:"grain_bytes"` // bytes between candidates
	Refs  []uint64 `json:"refs"`        // the line hammered for each class
	// Label: the class of each candidate, -1 where no hammer slowed it
	// clearly more than every other.
	Label      []int `json:"label"`
	Undecided  int   `json:"undecided"`
	Sizes      []int `json:"sizes"` // candidates per class
	Duds       int   `json:"duds"`  // hammered lines that made no class
	MinRun     int   `json:"min_run"`
	CommonRun  int   `json:"common_run"`
	RepeatPage bool  `json:"repeat_per_page,omitempty"`
}

// scores is the running best and second-best slowdown of every candidate
// over the hammers so far.
type scores struct {
	best, second []float64
	label        []int
}

func newScores(n int) *scores {
	s := &scores{best: make([]float64, n), second: make([]float64, n), label: make([]int, n)}
	for i := range s.label {
		s.label[i] = -1
	}
	return s
}

func (s *scores) clone() *scores {
	return &scores{best: slices.Clone(s.best), second: slices.Clone(s.second), label: slices.Clone(s.label)}
}

// add takes the times of one hammer run as class c's.
func (s *scores) add(t []uint32, c int) {
	m := medianU(t)
	for i, v := range t {
		x := float64(v) / m
		switch {
		case x > s.best[i]:
			s.second[i], s.best[i], s.label[i] = s.best[i], x, c
		case x > s.second[i]:
			s.second[i] = x
		}
	}
}

// decided is the label of candidate i: its best class when that slowed it
// SlowFactor times the median and twice as much as any other.
func (s *scores) decided(i int) int {
	if s.best[i] >= SlowFactor && s.best[i] >= 2*s.second[i] {
		return s.label[i]
	}
	return -1
}

func medianU(t []uint32) float64 {
	s := append([]uint32(nil), t...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return max(1, float64(s[len(s)/2]))
}

// FindClasses hammers one line at a time (the first candidate no hammer
// has claimed yet) and gives each candidate the class of the hammer that
// slowed it most, until at most a 200th of the candidates is undecided or
// maxClasses hammers have made classes. A hammered line that does not
// claim at least a 1000th of the candidates (noise: a line whose first
// timing was wild) is a dud and is not tried again. The n candidates are
// the lines Offsets(n, grain), in pages of pageBytes.
func FindClasses(n, grain, pageBytes int, time Timer, maxClasses int) (Classes, error) {
	if n <= 0 || grain <= 0 {
		return Classes{}, errors.New("no candidates")
	}
	cand := Offsets(n, grain)
	s := newScores(n)
	c := Classes{Grain: grain}
	tried := map[int]bool{}
	for len(c.Refs) < maxClasses {
		ref := -1
		for i := range n {
			if s.decided(i) < 0 && !tried[i] {
				ref = i
				break
			}
		}
		if ref < 0 {
			break
		}
		tried[ref] = true
		t, err := time([]uint64{cand[ref]}, lineThreads)
		if err != nil {
			return c, fmt.Errorf("hammering line %#x: %w", cand[ref], err)
		}
		if len(t) != n {
			return c, fmt.Errorf("hammering line %#x: %d times for %d candidates", cand[ref], len(t), n)
		}
		k := len(c.Refs)
		trial := s.clone()
		trial.add(t, k)
		claimed := 0
		for i := range n {
			if trial.decided(i) == k {
				claimed++
			}
		}
		if claimed*1000 < n {
			c.Duds++
			continue
		}
		s = trial
		c.Refs = append(c.Refs, cand[ref])
		undecided := 0
		for i := range n {
			if s.decided(i) < 0 {
				undecided++
			}
		}
		if undecided*200 <= n {
			break
		}
	}
	c.Label = make([]int, n)
	c.Sizes = make([]int, len(c.Refs))
	for i := range n {
		c.Label[i] = s.decided(i)
		if c.Label[i] < 0 {
			c.Undecided++
		} else {
			c.Sizes[c.Label[i]]++
		}
	}
	c.MinRun, c.CommonRun = runs(c.Label)
	if per := pageBytes / grain; per > 0 && n >= 2*per {
		c.RepeatPage = comparePage(c.Label[:per], c.Label[per:2*per]) == "same"
	}
	return c, nil
}

// Offsets are the byte offsets of n candidates grain bytes apart.
func Offsets(n, grain int) []uint64 {
	o := make([]uint64, n)
	for i := range o {
		o[i] = uint64(i * grain)
	}
	return o
}

// Members returns the offsets of up to max candidates of class k.
func (c Classes) Members(k, max int) []uint64 {
	var m []uint64
	for i, l := range c.Label {
		if l == k && len(m) < max {
			m = append(m, uint64(i*c.Grain))
		}
	}
	return m
}

// Interference hammers classLines lines of each class from DRAM in turn
// and returns M[k][j]: the mean slowdown of class j's candidates while
// class k is hammered, against the candidates alone, over the median
// slowdown of all candidates (so that load everyone sees does not count).
func Interference(c Classes, time Timer) ([][]float64, error) {
	alone, err := time(nil, 0)
	if err != nil {
		return nil, fmt.Errorf("timing the candidates alone: %w", err)
	}
	k := len(c.Refs)
	m := make([][]float64, k)
	for a := range k {
		t, err := time(c.Members(a, classLines), classThreads)
		if err != nil {
			return nil, fmt.Errorf("hammering class %d: %w", a, err)
		}
		ratio := make([]float64, len(t))
		for i := range t {
			ratio[i] = float64(t[i]) / max(1, float64(alone[i]))
		}
		med := median(ratio)
		sum, cnt := make([]float64, k), make([]float64, k)
		for i, l := range c.Label {
			if l >= 0 {
				sum[l] += ratio[i]
				cnt[l]++
			}
		}
		m[a] = make([]float64, k)
		for j := range k {
			if cnt[j] > 0 {
				m[a][j] = sum[j] / cnt[j] / med
			}
		}
	}
	return m, nil
}

// GroupThreshold: two classes are in one group (they share DRAM) when
// hammering either slows the other by this factor on average.
const GroupThreshold = 1.15

// Groups joins classes that interfere (GroupThreshold, both directions
// averaged) into groups, transitively, and numbers the groups by their
// lowest class: group[k] for every class k.
func Groups(m [][]float64) []int {
	k := len(m)
	parent := make([]int, k)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for a := range k {
		for b := a + 1; b < k; b++ {
			if (m[a][b]+m[b][a])/2 >= GroupThreshold {
				ra, rb := find(a), find(b)
				parent[max(ra, rb)] = min(ra, rb)
			}
		}
	}
	group, number := make([]int, k), map[int]int{}
	for a := range k {
		r := find(a)
		if _, ok := number[r]; !ok {
			number[r] = len(number)
		}
		group[a] = number[r]
	}
	return group
}

// LabelPool labels every candidate of a (large) pool with the class whose
// reference line, hammered, slows it most, as FindClasses does, but with
// the references already known: one run per class.
func LabelPool(refs []uint64, n int, time Timer, progress func(done, total int)) ([]int, error) {
	s := newScores(n)
	for k, ref := range refs {
		t, err := time([]uint64{ref}, lineThreads)
		if err != nil {
			return nil, fmt.Errorf("hammering class %d: %w", k, err)
		}
		if len(t) != n {
			return nil, fmt.Errorf("hammering class %d: %d times for %d candidates", k, len(t), n)
		}
		s.add(t, k)
		if progress != nil {
			progress(k+1, len(refs))
		}
	}
	label := make([]int, n)
	for i := range label {
		label[i] = s.decided(i)
	}
	return label, nil
}
