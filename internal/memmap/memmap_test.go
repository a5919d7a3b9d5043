// Tests of memmap.go on synthetic scans and a scan recorded on the H100:
// chunks labelled with their L2 partition, runs of colours, the chase
// builders, lines labelled from each side.

package memmap

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// synth makes a scan of pages pages of per chunks from sms SMs: SMs with
// even ids sit on side 0. truth(c) is chunk c's partition. Latencies are
// 600 cycles near and 800 far, with noise, and one timing in fifty wild.
func synth(sms, pages, per int, truth func(c int) int, seed uint64) Scan {
	r := rand.New(rand.NewPCG(seed, 1))
	s := Scan{Chunk: 1024, PageSize: 1024 * per}
	for b := range sms {
		sm := 10 + b
		s.SMs = append(s.SMs, sm)
		row := make([]uint32, pages*per)
		for c := range row {
			v := 600 + r.NormFloat64()*15
			if truth(c) != sm%2 {
				v += 200
			}
			if r.IntN(50) == 0 {
				v = 400 + r.Float64()*800
			}
			row[c] = uint32(v)
		}
		s.Lat = append(s.Lat, row)
	}
	return s
}

func TestAnalyze(t *testing.T) {
	// two chunks of each colour in turn, inverted on odd pages
	truth := func(c int) int { return (c/2 + c/64) % 2 }
	s := synth(8, 4, 64, truth, 1)
	m, err := Analyze(s)
	if err != nil {
		t.Fatal(err)
	}
	// the first SM (id 10, even) is side 0 and near colour 0
	wrong := 0
	for c, col := range m.Colour {
		if col >= 0 && col != truth(c) {
			wrong++
		}
	}
	if wrong > 0 || m.Undecided > len(m.Colour)/20 {
		t.Errorf("%d of %d chunks mislabelled, %d undecided", wrong, len(m.Colour), m.Undecided)
	}
	for sm, side := range m.Side {
		if side != sm%2 {
			t.Errorf("SM %d on side %d", sm, side)
		}
	}
	if m.CommonRun != 2 { // (a skipped undecided chunk may leave a shorter run)
		t.Errorf("most common run %d chunks, want 2", m.CommonRun)
	}
	if strings.Join(m.Pages, " ") != "same inverted same inverted" {
		t.Errorf("pages %v", m.Pages)
	}
	if math.Abs(m.NearCycles-600) > 10 || math.Abs(m.FarCycles-800) > 10 || math.Abs(m.Share[0]-0.5) > 0.01 {
		t.Errorf("near %g far %g share %v", m.NearCycles, m.FarCycles, m.Share)
	}
	// a second scan of the same pool agrees, whatever its first SM's side
	s2 := synth(8, 4, 64, truth, 2)
	s2.SMs[0], s2.SMs[1] = s2.SMs[1], s2.SMs[0]
	s2.Lat[0], s2.Lat[1] = s2.Lat[1], s2.Lat[0]
	m2, err := Analyze(s2)
	if err != nil {
		t.Fatal(err)
	}
	if a := Agreement(m, m2); a < 0.99 {
		t.Errorf("two scans agree on %.1f%% of chunks", 100*a)
	}
}

func TestAnalyzeRejects(t *testing.T) {
	flat := synth(4, 1, 64, func(int) int { return 0 }, 3)
	for b := range flat.Lat {
		for c := range flat.Lat[b] {
			flat.Lat[b][c] = 600 + uint32(c%3)
		}
	}
	if _, err := Analyze(flat); err == nil || !strings.Contains(err.Error(), "no near/far split") {
		t.Errorf("a flat scan: %v", err)
	}
	one := synth(1, 1, 64, func(c int) int { return c % 2 }, 4)
	if _, err := Analyze(one); err == nil {
		t.Error("a scan from one SM was analysed")
	}
	bad := synth(2, 1, 64, func(c int) int { return c % 2 }, 5)
	bad.PageSize = 1000
	if _, err := Analyze(bad); err == nil {
		t.Error("pages that are no whole number of chunks were accepted")
	}
}

func TestRuns(t *testing.T) {
	for _, tc := range []struct {
		colour         []int
		shortest, most int
	}{
		{[]int{0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1}, 4, 4}, // the cut ends do not count
		{[]int{0, 1, 0, 1, 1, 0, 1}, 1, 1},
		{[]int{1, 1, 1}, 3, 3},
		{[]int{0, 1, 1, -1, 1, 0, 0}, 3, 3}, // the undecided chunk is skipped
	} {
		if s, c := runs(tc.colour); s != tc.shortest || c != tc.most {
			t.Errorf("runs(%v) = %d, %d, want %d, %d", tc.colour, s, c, tc.shortest, tc.most)
		}
	}
}

func TestChaseBuilders(t *testing.T) {
	next := RandomCycle(4096, 128, 7) // 32 slots of 128 bytes
	seen := map[uint32]bool{}
	i := uint32(0)
	for range 32 {
		if i%32 != 0 || seen[i] {
			t.Fatalf("the cycle revisits or leaves the slots at word %d", i)
		}
		seen[i] = true
		i = next[i]
	}
	if i != 0 || len(seen) != 32 {
		t.Errorf("after 32 steps at %d having seen %d slots", i, len(seen))
	}
	seq := Sequential(1024, 32) // words 0, 8, 16, ... then back to 0
	if seq[0] != 8 || seq[248] != 0 {
		t.Errorf("sequential chase %v", seq[:16])
	}
}

// TestRecordedH100 analyses a scan recorded on the H100 (2 pages of 2 MiB,
// 1 KiB chunks, every SM; carve memmap --pages 2 --raw) and checks what
// holds in it: two sides of SMs of about equal size, far chunks slower
// than near ones, and few chunks undecided.
func TestRecordedH100(t *testing.T) {
	var rec struct {
		Scans []Scan `json:"scans"`
	}
	readRecording(t, "testdata/h100-2pages.json.gz", &rec)
	if len(rec.Scans) != 1 {
		t.Fatalf("recording of %d scans, want 1", len(rec.Scans))
	}
	m, err := Analyze(rec.Scans[0])
	if err != nil {
		t.Fatal(err)
	}
	sides := [2]int{}
	for _, s := range m.Side {
		sides[s]++
	}
	t.Logf("sides %v, near %.0f far %.0f cycles, shares %.2f/%.2f, %d of %d undecided, common run %d, pages %v",
		sides, m.NearCycles, m.FarCycles, m.Share[0], m.Share[1], m.Undecided, len(m.Colour), m.CommonRun, m.Pages)
	if sides[0] < 40 || sides[1] < 40 {
		t.Errorf("SM sides %v: want two large groups", sides)
	}
	if m.FarCycles < m.NearCycles+15 {
		t.Errorf("far %.0f cycles, near %.0f: no separation", m.FarCycles, m.NearCycles)
	}
	if m.Undecided > len(m.Colour)/10 {
		t.Errorf("%d of %d chunks undecided", m.Undecided, len(m.Colour))
	}
}

func TestLabelFromSides(t *testing.T) {
	// 4 slices; in each the side-1 SM is slower overall by a different
	// offset; lines alternate near side 0 / side 1 in threes, 30 cycles
	// apart, with noise.
	r := rand.New(rand.NewPCG(9, 9))
	n, blocks := 1200, 4
	truth := func(l int) int { return (l / 3) % 2 }
	lat0, lat1 := make([]uint32, n), make([]uint32, n)
	for l := range n {
		off := float64(20 * (l / (n / blocks)))
		a, b := 280.0, 310.0
		if truth(l) == 1 {
			a, b = b, a
		}
		lat0[l] = uint32(a + r.NormFloat64()*4)
		lat1[l] = uint32(b + off + r.NormFloat64()*4)
	}
	labels, gap := LabelFromSides(lat0, lat1, blocks)
	wrong, undecided := 0, 0
	for l, c := range labels {
		switch {
		case c < 0:
			undecided++
		case c != truth(l):
			wrong++
		}
	}
	if wrong > 0 || undecided > n/50 || math.Abs(gap-60) > 6 {
		t.Errorf("%d wrong, %d undecided, gap %.1f (want 0, few, 60)", wrong, undecided, gap)
	}
}

// readRecording decodes a gzipped JSON recording of GPU timings into v.
func readRecording(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(z).Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
