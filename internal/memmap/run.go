// carve memmap: its options, the run that measures a GPU's memory system
// (latencies, the L2 partitions of a pool and, if asked, its slices,
// groups and L2 sets), and the result saved and printed.

package memmap

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/carve-gpu/carve/internal/jsonfile"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/topo"
)

// Result is what carve memmap finds and saves as json.
type Result struct {
	Device, UUID, Driver, Date string
	Pages, PageBytes, Chunk    int
	Reps                       int
	L2HitCycles                float64         `json:"l2_hit_cycles"` // random lines in 4 MiB
	DRAMCycles                 float64         `json:"dram_cycles"`   // random lines in 512 MiB
	StrideCycles               map[int]float64 `json:"sequential_stride_cycles"`
	Maps                       []Map           `json:"maps"`                      // one per scan
	Agreement                  []float64       `json:"agreement_with_first_scan"` // of the same pool
	// Structure: slices and DRAM groups learnt from the first LearnBytes
	// of a second pool (LearnPages pages).
	LearnPages, LearnBytes int
	Structure              *Structure `json:"structure,omitempty"`
	// PairCycles[k]: two DRAM loads issued together, at the second pool's
	// start and (k+1)*128 bytes after it, least of 4 tries; PairByRelation
	// summarises them by the second line's slice and group against the
	// first's.
	PairCycles     []uint32               `json:"pair_cycles,omitempty"`
	PairByRelation map[string]stats.Stats `json:"pair_by_relation,omitempty"`
	// EvictionSet: lines of the second pool that evict its first line
	// from the L2 when loaded after it; Essential: how many of them the
	// rest cannot do without (the ways of an LRU-like set).
	EvictionSet []uint64 `json:"eviction_set,omitempty"`
	Essential   int      `json:"essential,omitempty"`
	// GPCSides counts, for each GPC of carve topo, its SMs on each side
	// in the first scan: whether the L2 partitions split along GPCs.
	GPCSides [][2]int `json:"gpc_sides"`
	Scans    []Scan   `json:"scans,omitempty"`
}

// Options are carve memmap's flags.
type Options struct {
	Pages, Chunk, Reps, Scans int
	KeepRaw                   bool // keep every timing in the result
	PairBytes, LearnMiB       int
	Evict                     bool
	Progress                  func(done, total int)
}

// Check rejects options that cannot run, before the GPU is asked.
func (o Options) Check() error {
	if o.Pages < 1 || o.Reps < 1 || o.Scans < 1 {
		return errors.New("--pages, --reps and --scans: want at least 1")
	}
	return nil
}

// Strides are the sequential strides timed, in bytes.
var Strides = []int{4, 8, 16, 32, 64, 128, 256, 512}

// Run measures the memory system of p's GPU (t its topology): latencies,
// the L2 partitions of a pool of physical pages, and, with o.LearnMiB, the
// L2 slices, DRAM groups, DRAM pairs and an L2 set in a second pool.
func Run(p *Probe, t *topo.Topology, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	r := &Result{Device: t.Device, UUID: t.UUID, Driver: t.Driver, Date: time.Now().UTC().Format(time.RFC3339),
		Pages: o.Pages, Chunk: o.Chunk, Reps: o.Reps, StrideCycles: map[int]float64{}}
	step, total := 0, 2+len(Strides)+o.Scans+3
	tick := func() { step++; o.Progress(step, total) }
	var err error
	if r.L2HitCycles, err = p.Chase(RandomCycle(4<<20, 128, 1), 20000); err != nil {
		return nil, err
	}
	tick()
	if r.DRAMCycles, err = p.Chase(RandomCycle(512<<20, 128, 2), 20000); err != nil {
		return nil, err
	}
	tick()
	for _, s := range Strides {
		if r.StrideCycles[s], err = p.Chase(Sequential(256<<20, s), 20000); err != nil {
			return nil, err
		}
		tick()
	}
	pool, err := p.Pool(o.Pages)
	if err != nil {
		return nil, fmt.Errorf("mapping %d pages: %w", o.Pages, err)
	}
	r.PageBytes = pool.Size
	for i := range o.Scans {
		s, err := p.ScanL2(pool, o.Chunk, o.Reps)
		if err != nil {
			return nil, err
		}
		m, err := Analyze(s)
		if err != nil {
			return nil, fmt.Errorf("scan %d: %w", i, err)
		}
		r.Maps = append(r.Maps, m)
		r.Agreement = append(r.Agreement, Agreement(r.Maps[0], m))
		if o.KeepRaw {
			r.Scans = append(r.Scans, s)
		}
		tick()
	}
	if o.LearnMiB > 0 {
		if err := learn(p, r, o.LearnMiB, o.PairBytes, o.Evict, tick); err != nil {
			return nil, err
		}
	}
	for _, g := range t.GPCs {
		var n [2]int
		for _, i := range g.TPCs {
			for _, sm := range t.TPCs[i].SMs {
				if side, ok := r.Maps[0].Side[sm]; ok {
					n[side]++
				}
			}
		}
		r.GPCSides = append(r.GPCSides, n)
	}
	return r, nil
}

// Save writes r as DIR/memmap.json, with the slices' interference map as
// DIR/memmap.{png,svg} where r has one.
func (r *Result) Save(dir string) (string, error) {
	path, err := jsonfile.Save(dir, "memmap.json", r)
	if err != nil {
		return "", err
	}
	if r.Structure != nil {
		return path, PlotStructure(*r.Structure, r.Device, filepath.Join(dir, "memmap"))
	}
	return path, nil
}

// WriteTable prints r as carve memmap does.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "L2 hit (random, 4 MiB)\t%.0f cycles\n", r.L2HitCycles)
	fmt.Fprintf(tw, "DRAM (random, 512 MiB)\t%.0f cycles\n", r.DRAMCycles)
	for _, s := range Strides {
		fmt.Fprintf(tw, "sequential, stride %d B\t%.0f cycles per load\n", s, r.StrideCycles[s])
	}
	for i, m := range r.Maps {
		fmt.Fprintf(tw, "scan %d: %d chunks of %d B in %d pages of %d B\tnear %.0f / far %.0f cycles; colours %.1f%% / %.1f%%; %d undecided; runs: shortest %d, most common %d chunks; agreement with scan 0 %.2f%%\n",
			i, len(m.Colour), r.Chunk, r.Pages, r.PageBytes, m.NearCycles, m.FarCycles, 100*m.Share[0], 100*m.Share[1], m.Undecided, m.MinRun, m.CommonRun, 100*r.Agreement[i])
		count := map[string]int{}
		for _, pg := range m.Pages {
			count[pg]++
		}
		fmt.Fprintf(tw, "  pages against page 0\t%v\n", count)
	}
	if st := r.Structure; st != nil {
		c := st.Classes
		fmt.Fprintf(tw, "slices (%d MiB learnt)\t%d classes of lines (%d undecided, %d duds); sizes %v; grain %d B (shortest run %d B); repeats per page %v\n",
			r.LearnBytes>>20, len(c.Refs), c.Undecided, c.Duds, c.Sizes, c.CommonRun*c.Grain, c.MinRun*c.Grain, c.RepeatPage)
		fmt.Fprintf(tw, "DRAM groups\t%d; group of each class %v; lines per group %v\n", st.Groups, st.Group, st.GroupSizes())
		in, out := groupSlowdowns(*st)
		mates := "none (every group is one class)"
		if st.Groups < len(c.Refs) {
			mates = fmt.Sprintf("%.2fx", in[1])
		}
		fmt.Fprintf(tw, "slowdown while a class's lines are loaded from DRAM\town class %.2fx, others of its group %s, other groups %.2fx (means)\n", in[0], mates, out)
	}
	for _, rel := range []string{"same class", "same group", "other group"} {
		if st, ok := r.PairByRelation[rel]; ok {
			fmt.Fprintf(tw, "DRAM pairs, %s (%d)\tcycles min %.0f p25 %.0f p50 %.0f p75 %.0f max %.0f\n", rel, st.N, st.Min, st.P25, st.P50, st.P75, st.Max)
		}
	}
	if len(r.EvictionSet) > 0 {
		fmt.Fprintf(tw, "L2 set of line 0\t%d lines evict it, %d of them essential: %#x\n", len(r.EvictionSet), r.Essential, r.EvictionSet)
	}
	for i, n := range r.GPCSides {
		fmt.Fprintf(tw, "GPC %d: SMs on side 0 / 1\t%d / %d\n", i, n[0], n[1])
	}
	return tw.Flush()
}

// learnPages is the second pool of carve memmap: room for an eviction
// sweep of twice the H100's L2 after the first MiB.
const learnPages = 64

// learn runs memmap's slice, group, pair and L2-set probes on a second
// pool.
func learn(p *Probe, r *Result, mib, pairBytes int, evict bool, tick func()) error {
	pool, err := p.Pool(learnPages)
	if err != nil {
		return fmt.Errorf("mapping %d pages: %w", learnPages, err)
	}
	r.LearnPages, r.LearnBytes = learnPages, min(mib<<20, pool.Size*pool.Count)
	st, err := p.Learn(pool, r.LearnBytes)
	if err != nil {
		return err
	}
	r.Structure = &st
	tick()
	if n := min(pairBytes, r.LearnBytes) / LineBytes; n > 1 {
		offs := make([]uint64, n-1)
		for i := range offs {
			offs[i] = uint64((i + 1) * LineBytes)
		}
		if r.PairCycles, err = p.PairLatency(pool.Base, offs, 4); err != nil {
			return err
		}
		by := map[string][]float64{}
		l := st.Classes.Label
		for i, o := range offs {
			a, b := l[0], l[o/LineBytes]
			if a < 0 || b < 0 {
				continue
			}
			rel := "other group"
			switch {
			case a == b:
				rel = "same class"
			case st.Group[a] == st.Group[b]:
				rel = "same group"
			}
			by[rel] = append(by[rel], float64(r.PairCycles[i]))
		}
		r.PairByRelation = map[string]stats.Stats{}
		for rel, xs := range by {
			r.PairByRelation[rel] = stats.Summarize(xs)
		}
	}
	tick()
	if evict {
		threshold := (r.L2HitCycles + r.DRAMCycles) / 2
		ev := p.Evicted(pool, 0, threshold, 3)
		const from = 1 << 20
		if r.EvictionSet, err = EvictionSet(ev, from, from+96<<20, LineBytes, 64); err != nil {
			return fmt.Errorf("L2 set of line 0: %w", err)
		}
		if r.Essential, err = Essential(ev, from, r.EvictionSet); err != nil {
			return err
		}
	}
	tick()
	return nil
}

// groupSlowdowns averages the interference matrix: a class's slowdown of
// itself, of the other classes of its group, and of other groups'.
func groupSlowdowns(s Structure) (in [2]float64, out float64) {
	var sum, n [3]float64
	for a, row := range s.Interference {
		for b, x := range row {
			k := 2
			switch {
			case a == b:
				k = 0
			case s.Group[a] == s.Group[b]:
				k = 1
			}
			sum[k] += x
			n[k]++
		}
	}
	for k := range 3 {
		if n[k] > 0 {
			sum[k] /= n[k]
		}
	}
	return [2]float64{sum[0], sum[1]}, sum[2]
}
