// Package memmap measures how the GPU's L2 and DRAM are laid out, from user
// space, by timing loads: the L2 partition each chunk of a pool of physical
// pages lives in (near or far as seen from SMs of different GPCs), the L2
// slice each line waits on (by contention), which slices share DRAM, the
// lines of one L2 set, and the latencies of L2 hits and DRAM accesses. The
// analyses (Analyze, FindClasses, Groups, EvictionSet) are plain Go over
// timings, tested without a GPU.
package memmap

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Scan is a chunk-latency sweep: Lat[b][c] is the mean L2-hit latency
// (cycles) of chunk c of the pool as seen from block b, which ran on SM
// SMs[b]. Chunks are Chunk bytes apart, pages PageSize bytes long.
type Scan struct {
	Chunk    int        `json:"chunk_bytes"`
	PageSize int        `json:"page_bytes"`
	SMs      []int      `json:"sms"`
	Lat      [][]uint32 `json:"latency_cycles"`
}

// Map is what Analyze finds in a scan.
type Map struct {
	// Side of each SM: 0 if it sees the same chunks near as the first
	// block's SM, 1 if it sees them the other way round.
	Side map[int]int `json:"side_of_sm"`
	// Colour of each chunk: the L2 partition it lives in, numbered by the
	// side of SMs it is near to; -1 where the SMs did not agree enough.
	Colour     []int   `json:"colour"`
	Undecided  int     `json:"undecided"`
	NearCycles float64 `json:"near_cycles"` // median L2-hit latency of near chunks
	FarCycles  float64 `json:"far_cycles"`  // and of far ones
	// Share of chunks of each colour.
	Share [2]float64 `json:"share"`
	// Runs: how many chunks in a row share a colour, in address order:
	// the shortest run and the most common one (the interleave).
	MinRun    int `json:"min_run_chunks"`
	CommonRun int `json:"common_run_chunks"`
	// Pages: how each page's colours compare with page 0's: "same",
	// "inverted" or "different".
	Pages []string `json:"pages"`
}

// split2 is a one-dimensional two-means: the threshold between the two
// clusters of xs and the clusters' means. It starts from the 10th and 90th
// percentiles, so that a few wild timings cannot become a cluster.
func split2(xs []float64) (threshold, lo, hi float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	lo, hi = s[len(s)/10], s[len(s)*9/10]
	for range 50 {
		t := (lo + hi) / 2
		var sl, sh, nl, nh float64
		for _, x := range xs {
			if x <= t {
				sl, nl = sl+x, nl+1
			} else {
				sh, nh = sh+x, nh+1
			}
		}
		if nl == 0 || nh == 0 {
			break
		}
		lo, hi = sl/nl, sh/nh
	}
	return (lo + hi) / 2, lo, hi
}

// Analyze labels every chunk of s with the L2 partition it lives in. The
// timings are centred per SM (SMs differ in their distance to every slice);
// the direction in which they vary together across SMs (the first
// principal component, by power iteration) separates the SMs into two
// sides by the sign of their loading, and each chunk's score along it into
// two colours by a two-means split. A chunk whose score lies within a
// quarter of the gap between the two clusters' means of the threshold is
// left undecided: single noisy timings do not decide a label.
func Analyze(s Scan) (Map, error) {
	if len(s.Lat) < 2 {
		return Map{}, errors.New("a scan from at least two SMs is needed")
	}
	n, k := len(s.Lat[0]), len(s.Lat)
	if n == 0 || s.Chunk <= 0 || s.PageSize%s.Chunk != 0 {
		return Map{}, fmt.Errorf("scan of %d chunks of %d bytes in pages of %d: malformed", n, s.Chunk, s.PageSize)
	}
	x := make([][]float64, k) // x[b][c]: centred latency
	for b, row := range s.Lat {
		if len(row) != n {
			return Map{}, fmt.Errorf("block %d timed %d chunks, block 0 %d", b, len(row), n)
		}
		x[b] = make([]float64, n)
		mean := 0.0
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(n)
		for c, v := range row {
			x[b][c] = float64(v) - mean
		}
	}
	// covariance between SMs, k x k
	cov := make([][]float64, k)
	for i := range cov {
		cov[i] = make([]float64, k)
		for j := 0; j <= i; j++ {
			sum := 0.0
			for c := range n {
				sum += x[i][c] * x[j][c]
			}
			cov[i][j] = sum / float64(n)
			cov[j][i] = cov[i][j]
		}
	}
	v := make([]float64, k)
	for i := range v {
		v[i] = 1 / math.Sqrt(float64(k))
	}
	if k > 1 {
		v[1] = -v[1] // not orthogonal to a component of mixed signs
	}
	for range 200 {
		w := make([]float64, k)
		norm := 0.0
		for i := range k {
			for j := range k {
				w[i] += cov[i][j] * v[j]
			}
			norm += w[i] * w[i]
		}
		norm = math.Sqrt(norm)
		if norm == 0 {
			return Map{}, errors.New("no variation in the timings")
		}
		for i := range w {
			w[i] /= norm
		}
		v = w
	}
	if v[0] < 0 { // side 0 is the first block's
		for i := range v {
			v[i] = -v[i]
		}
	}
	m := Map{Side: map[int]int{}, Colour: make([]int, n)}
	side := make([]int, k)
	for b := range k {
		if v[b] < 0 {
			side[b] = 1
		}
		m.Side[s.SMs[b]] = side[b]
	}
	score := make([]float64, n)
	for c := range n {
		for b := range k {
			score[c] += v[b] * x[b][c]
		}
	}
	t, lo, hi := split2(score)
	if gap := hi - lo; gap < 10*math.Sqrt(float64(k))/4 {
		return Map{}, fmt.Errorf("no near/far split: the chunks' scores form no two clusters (gap %.1f)", gap)
	}
	margin := (hi - lo) / 4
	var nearLat, farLat []float64
	for c := range n {
		switch {
		case score[c] > t+margin:
			m.Colour[c] = 1 // slow from side 0: near side 1
		case score[c] < t-margin:
			m.Colour[c] = 0
		default:
			m.Colour[c], m.Undecided = -1, m.Undecided+1
			continue
		}
		m.Share[m.Colour[c]]++
		for b := range k {
			if m.Colour[c] == side[b] {
				nearLat = append(nearLat, float64(s.Lat[b][c]))
			} else {
				farLat = append(farLat, float64(s.Lat[b][c]))
			}
		}
	}
	if decided := float64(n - m.Undecided); decided > 0 {
		m.Share[0] /= decided
		m.Share[1] /= decided
	}
	m.NearCycles, m.FarCycles = median(nearLat), median(farLat)
	m.MinRun, m.CommonRun = runs(m.Colour)
	per := s.PageSize / s.Chunk
	for p := 0; p*per < n; p++ {
		m.Pages = append(m.Pages, comparePage(m.Colour[:min(per, n)], m.Colour[p*per:min((p+1)*per, n)]))
	}
	return m, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// runs returns the shortest and the most common length of runs of equal
// colours, over the decided chunks only (an undecided chunk is skipped).
func runs(all []int) (shortest, common int) {
	var colour []int
	for _, c := range all {
		if c >= 0 {
			colour = append(colour, c)
		}
	}
	count := map[int]int{}
	for i := 0; i < len(colour); {
		j := i
		for j < len(colour) && colour[j] == colour[i] {
			j++
		}
		// the first and last runs may be cut by the pool's ends
		if i > 0 && j < len(colour) {
			count[j-i]++
		}
		i = j
	}
	shortest = math.MaxInt
	best := 0
	for l, c := range count {
		shortest = min(shortest, l)
		if c > best || (c == best && l < common) {
			common, best = l, c
		}
	}
	if len(count) == 0 {
		shortest = len(colour)
		common = len(colour)
	}
	return shortest, common
}

// comparePage says how page b's colours relate to page a's.
func comparePage(a, b []int) string {
	same, inv, known := 0, 0, 0
	for i := range min(len(a), len(b)) {
		if a[i] < 0 || b[i] < 0 {
			continue
		}
		known++
		if a[i] == b[i] {
			same++
		} else {
			inv++
		}
	}
	switch {
	case known == 0:
		return "undecided"
	case float64(same) >= 0.95*float64(known):
		return "same"
	case float64(inv) >= 0.95*float64(known):
		return "inverted"
	}
	return "different"
}

// Agreement is the share of chunks two maps give the same decided colour,
// up to renaming the colours (the sides are numbered from each scan's
// first SM).
func Agreement(a, b Map) float64 {
	same, inv, known := 0, 0, 0
	for i := range min(len(a.Colour), len(b.Colour)) {
		if a.Colour[i] < 0 || b.Colour[i] < 0 {
			continue
		}
		known++
		if a.Colour[i] == b.Colour[i] {
			same++
		} else {
			inv++
		}
	}
	if known == 0 {
		return 0
	}
	return float64(max(same, inv)) / float64(known)
}

// LabelFromSides labels lines from their latencies seen from an SM on side
// 0 (lat0) and one on side 1 (lat1), the lines in blocks equal slices each
// timed by one SM per side: each latency is centred on its slice's mean
// (SMs differ), and a line is near side 0 (label 0) when it is faster from
// there than from side 1 by more than a quarter of the gap between the two
// clusters of differences, near side 1 (label 1) in the opposite case, and
// undecided (-1) in between. It returns the labels and the gap (cycles).
func LabelFromSides(lat0, lat1 []uint32, blocks int) ([]int, float64) {
	n := len(lat0)
	per := (n + blocks - 1) / blocks
	d := make([]float64, n)
	for first := 0; first < n; first += per {
		last := min(n, first+per)
		var m0, m1 float64
		for l := first; l < last; l++ {
			m0 += float64(lat0[l])
			m1 += float64(lat1[l])
		}
		m0 /= float64(last - first)
		m1 /= float64(last - first)
		for l := first; l < last; l++ {
			d[l] = (float64(lat1[l]) - m1) - (float64(lat0[l]) - m0)
		}
	}
	t, lo, hi := split2(d)
	margin := (hi - lo) / 4
	labels := make([]int, n)
	for l, x := range d {
		switch {
		case x > t+margin:
			labels[l] = 0 // slower from side 1: near side 0
		case x < t-margin:
			labels[l] = 1
		default:
			labels[l] = -1
		}
	}
	return labels, hi - lo
}
