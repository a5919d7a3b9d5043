// Tests of classes.go and l2sets.go against models of the H100 (a fake
// memory's slices, an LRU L2) and against recorded H100 timings; and of
// structure.go's SplitGroups.

package memmap

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// fakeMemory is a model of the H100's contention: each 256-byte chunk
// belongs to an L2 slice (a different pattern in every page), slices sit
// in groups that share DRAM, and timings are noisy with a few wild ones.
type fakeMemory struct {
	slice  []int // of each 128-byte candidate line
	group  func(slice int) int
	rng    *rand.Rand
	wild   float64 // share of wild timings
	hammer int     // runs so far
}

func newFakeMemory(lines, slices, page int, seed uint64) *fakeMemory {
	rng := rand.New(rand.NewPCG(seed, 1))
	f := &fakeMemory{slice: make([]int, lines), group: func(s int) int { return s / 4 }, rng: rng, wild: 0.0005}
	perm := rng.Perm(slices)
	for l := range lines {
		chunk := l / 2
		if chunk%(page/256) == 0 {
			perm = rng.Perm(slices) // every page its own order
		}
		f.slice[l] = perm[chunk%slices]
	}
	return f
}

func (f *fakeMemory) sliceOf(off uint64) int { return f.slice[off/128] }

func (f *fakeMemory) time(hammer []uint64, threads int) ([]uint32, error) {
	f.hammer++
	hs := map[int]bool{}
	for _, h := range hammer {
		hs[f.sliceOf(h)] = true
	}
	t := make([]uint32, len(f.slice))
	for i, s := range f.slice {
		x := 600 + 100*f.rng.Float64()
		switch {
		case len(hammer) == 1 && hs[s]:
			x *= 30
		case len(hammer) > 1 && hs[s]:
			x *= 4
		case len(hammer) > 1 && hs[f.group(s)*4] || len(hammer) > 1 && anyGroup(hs, f.group(s), f.group):
			x *= 1.6
		}
		if f.rng.Float64() < f.wild {
			x *= 10
		}
		t[i] = uint32(x)
	}
	return t, nil
}

func anyGroup(hs map[int]bool, g int, group func(int) int) bool {
	for s := range hs {
		if group(s) == g {
			return true
		}
	}
	return false
}

// agree is the share of decided labels that match the truth under the
// best one-to-one renaming found greedily (each label to its commonest
// true value).
func agree(label, truth []int) float64 {
	votes := map[int]map[int]int{}
	for i, l := range label {
		if l < 0 {
			continue
		}
		if votes[l] == nil {
			votes[l] = map[int]int{}
		}
		votes[l][truth[i]]++
	}
	good, all := 0, 0
	for _, v := range votes {
		best := 0
		for _, c := range v {
			best = max(best, c)
			all += c
		}
		good += best
	}
	return float64(good) / float64(all)
}

func TestFindClasses(t *testing.T) {
	const lines, slices, page = 1 << 14, 16, 1 << 20
	f := newFakeMemory(lines, slices, page, 1)
	c, err := FindClasses(lines, 128, page, f.time, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Refs) != slices {
		t.Fatalf("%d classes (%d duds), want %d", len(c.Refs), c.Duds, slices)
	}
	if a := agree(c.Label, f.slice); a < 0.999 {
		t.Errorf("labels agree with the slices on %.4f", a)
	}
	if c.Undecided*200 > lines {
		t.Errorf("%d undecided of %d", c.Undecided, lines)
	}
	if c.CommonRun != 2 {
		t.Errorf("most common run %d lines, want the 256-byte grain (2)", c.CommonRun)
	}
	if c.RepeatPage {
		t.Error("pages differ in the model, but the pattern was said to repeat")
	}
	m, err := Interference(c, f.time)
	if err != nil {
		t.Fatal(err)
	}
	g := Groups(m)
	classSlice := make([]int, len(c.Refs))
	for k, ref := range c.Refs {
		classSlice[k] = f.sliceOf(ref)
	}
	for a := range g {
		for b := range g {
			same := f.group(classSlice[a]) == f.group(classSlice[b])
			if (g[a] == g[b]) != same {
				t.Fatalf("classes %d and %d (slices %d, %d): grouped together %v, share DRAM %v; M %.2f / %.2f",
					a, b, classSlice[a], classSlice[b], g[a] == g[b], same, m[a][b], m[b][a])
			}
		}
	}
	label, err := LabelPool(c.Refs, lines, f.time, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := agree(label, f.slice); a < 0.999 {
		t.Errorf("pool labels agree with the slices on %.4f", a)
	}
}

func TestFindClassesErrors(t *testing.T) {
	short := func([]uint64, int) ([]uint32, error) { return make([]uint32, 3), nil }
	if _, err := FindClasses(10, 128, 1<<20, short, 4); err == nil {
		t.Error("a timer that returns too few times was accepted")
	}
	if _, err := FindClasses(0, 128, 1<<20, short, 4); err == nil {
		t.Error("no candidates was accepted")
	}
}

func TestGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    [][]float64
		want []int
	}{
		{"none", [][]float64{{4, 1}, {1, 4}}, []int{0, 1}},
		{"pair", [][]float64{{4, 1.3, 1}, {1.2, 4, 1}, {1, 1, 4}}, []int{0, 0, 1}},
		{"one way weak", [][]float64{{4, 1.25}, {1.0, 4}}, []int{0, 1}},
		{"transitive", [][]float64{{4, 2, 1}, {2, 4, 2}, {1, 2, 4}}, []int{0, 0, 0}},
	} {
		got := Groups(tc.m)
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: groups %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

// lruL2 is an LRU cache of ways-way sets indexed by a hash of the line.
type lruL2 struct {
	sets, ways int
	rng        *rand.Rand
	noise      float64
}

func (c lruL2) set(off uint64) int { l := off / 128; return int((l*2654435761)>>7) % c.sets }

// evicted: the target (offset 0) is loaded, then the sweep and extra; it
// is evicted once ways other lines of its set came after it. One try in
// twenty lies; the vote of five hides that.
func (c lruL2) evicted(from, end uint64, extra []uint64) (bool, error) {
	n := 0
	for o := from; o < end; o += 128 {
		if c.set(o) == c.set(0) {
			n++
		}
	}
	for _, o := range extra {
		if c.set(o) == c.set(0) && (o < from || o >= end) {
			n++
		}
	}
	yes := 0
	for range 5 {
		v := n >= c.ways
		if c.rng.Float64() < c.noise {
			v = !v
		}
		if v {
			yes++
		}
	}
	return yes >= 3, nil
}

func TestEvictionSet(t *testing.T) {
	c := lruL2{sets: 512, ways: 12, rng: rand.New(rand.NewPCG(3, 4)), noise: 0.05}
	mates, err := EvictionSet(c.evicted, 1<<20, 1<<20+64<<20, 128, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(mates) != c.ways {
		t.Fatalf("%d lines found, want %d (the ways)", len(mates), c.ways)
	}
	for _, m := range mates {
		if c.set(m) != c.set(0) {
			t.Errorf("line %#x is not in the target's set", m)
		}
	}
	n, err := Essential(c.evicted, 1<<20, mates)
	if err != nil {
		t.Fatal(err)
	}
	if n != c.ways {
		t.Errorf("%d essential lines, want %d", n, c.ways)
	}
	if _, err := EvictionSet(c.evicted, 1<<20, 1<<20+1024, 128, 64); err == nil {
		t.Error("a sweep too short to evict was accepted")
	}
}

func TestSplitGroups(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  [2]int // memory per colour
	}{
		{[]int{8, 8, 8, 8, 4, 4}, [2]int{20, 20}},
		{[]int{10, 1}, [2]int{10, 1}},
		{[]int{5, 5, 5}, [2]int{10, 5}},
	} {
		c := SplitGroups(tc.sizes)
		var got [2]int
		for g, s := range tc.sizes {
			got[c[g]] += s
		}
		if got != tc.want {
			t.Errorf("sizes %v: colours %v hold %v, want %v", tc.sizes, c, got, tc.want)
		}
	}
}

// TestRecordedSlices labels recorded H100 timings: three single-line
// hammers, each run twice, over every line of 4 MiB. The labels of one
// run must be the lines the other run of the same hammer slows too (the
// labelling is stable), each hammer's slice must hold about a 40th of the
// lines, and slices come in 256-byte pieces.
func TestRecordedSlices(t *testing.T) {
	var rec struct {
		Lines []int        `json:"hammered_lines"`
		Runs  [][][]uint32 `json:"runs"` // [hammer][repeat][candidate]
	}
	readRecording(t, "testdata/h100-slices.json.gz", &rec)
	if len(rec.Runs) != 3 {
		t.Fatalf("recording of %d hammers, want 3", len(rec.Runs))
	}
	n := len(rec.Runs[0][0])
	refs := make([]uint64, len(rec.Lines))
	for k, l := range rec.Lines {
		refs[k] = uint64(l * 128)
	}
	replay := func(repeat int) Timer {
		return func(h []uint64, _ int) ([]uint32, error) {
			for k, r := range refs {
				if len(h) == 1 && h[0] == r {
					return rec.Runs[k][repeat], nil
				}
			}
			return nil, fmt.Errorf("no recording for %v", h)
		}
	}
	var labels [2][]int
	for rep := range 2 {
		var err error
		if labels[rep], err = LabelPool(refs, n, replay(rep), nil); err != nil {
			t.Fatal(err)
		}
	}
	for k, ref := range rec.Lines {
		var a, b, both int
		member := make([]int, n)
		for i := range n {
			in0, in1 := labels[0][i] == k, labels[1][i] == k
			if in0 {
				a++
				member[i] = 1
			}
			if in1 {
				b++
			}
			if in0 && in1 {
				both++
			}
		}
		if labels[0][ref] != k {
			t.Errorf("hammered line %d is not in its own slice", ref)
		}
		if a*60 < n || a*25 > n {
			t.Errorf("slice %d holds %d of %d lines, want about a 40th", k, a, n)
		}
		if float64(both) < 0.99*float64(max(a, b)) {
			t.Errorf("slice %d: the two runs label %d and %d lines, %d in both", k, a, b, both)
		}
		if _, common := runs(member); common != 2 {
			t.Errorf("slice %d: members come in runs of %d lines, want 2 (256 bytes)", k, common)
		}
	}
}
