package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/memmap"
	"github.com/carve-gpu/carve/internal/topo"
)

// memmapResult is what carve memmap saves.
type memmapResult struct {
	Device, UUID, Driver, Date string
	Pages, PageBytes, Chunk    int
	Reps                       int
	L2HitCycles                float64         `json:"l2_hit_cycles"` // random lines in 4 MiB
	DRAMCycles                 float64         `json:"dram_cycles"`   // random lines in 512 MiB
	StrideCycles               map[int]float64 `json:"sequential_stride_cycles"`
	Maps                       []memmap.Map    `json:"maps"`                      // one per scan
	Agreement                  []float64       `json:"agreement_with_first_scan"` // of the same pool
	// Structure: slices and DRAM groups learnt from the first LearnBytes
	// of a second pool (LearnPages pages).
	LearnPages, LearnBytes int
	Structure              *memmap.Structure `json:"structure,omitempty"`
	// PairCycles[k]: two DRAM loads issued together, at the second pool's
	// start and (k+1)*128 bytes after it, least of 4 tries; PairByRelation
	// summarises them by the second line's slice and group against the
	// first's.
	PairCycles     []uint32               `json:"pair_cycles,omitempty"`
	PairByRelation map[string]bench.Stats `json:"pair_by_relation,omitempty"`
	// EvictionSet: lines of the second pool that evict its first line
	// from the L2 when loaded after it; Essential: how many of them the
	// rest cannot do without (the ways of an LRU-like set).
	EvictionSet []uint64 `json:"eviction_set,omitempty"`
	Essential   int      `json:"essential,omitempty"`
	// GPCSides counts, for each GPC of carve topo, its SMs on each side
	// in the first scan: whether the L2 partitions split along GPCs.
	GPCSides [][2]int      `json:"gpc_sides"`
	Scans    []memmap.Scan `json:"scans,omitempty"`
}

func newMemmapCmd() *cobra.Command {
	var pages, chunk, reps, scans, device int
	var outDir, out string
	var keepRaw bool
	var pairBytes, learnMiB int
	var evict bool
	c := &cobra.Command{
		Use:   "memmap",
		Short: "Measure the GPU's L2 and DRAM layout from user space: latencies and L2 partitions",
		Long: `memmap times loads on the GPU to find how its memory is laid out:

  latencies   an L2 hit and a DRAM access (random pointer chases over 4 MiB
              and 512 MiB), and the mean cost of sequential loads at strides
              of 4 to 512 bytes (where it stops falling shows the fetch size)
  partitions  a pool of physical pages (cuMemCreate, mapped in order) is
              timed chunk by chunk from one block on every SM; chunks an SM
              sees fast are in the L2 partition near it. Each chunk is
              labelled by the vote of all SMs; runs of labels give the
              interleave, and page-by-page comparison whether the pattern
              repeats in every physical page
  slices      in a second pool, one line at a time is loaded from DRAM by
              every thread of half the SMs while the other half time a DRAM
              load of every line of the first --learn-mib MiB: the lines that
              wait far longer share the hammered line's L2 slice. Lines are
              hammered until every line has a slice (a class).
  groups      each slice's lines in turn are hammered from DRAM; slices that
              slow each other share DRAM (a group): memory of different
              groups can be given to tenants that must not interfere
  L2 sets     the lines that evict the pool's first line from the L2 when
              loaded after it (SGDRC's search, repeated): the set's ways
  DRAM pairs  two loads from DRAM at once, by the two lines' slices

Run it with the GPU otherwise idle. --scans labels the same pool again to
see how stable the labels are. Writes OUT/memmap.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if pages < 1 || reps < 1 || scans < 1 {
				return errors.New("--pages, --reps and --scans: want at least 1")
			}
			t, p, err := openProbe(device)
			if err != nil {
				return err
			}
			r := memmapResult{Device: t.Device, UUID: t.UUID, Driver: t.Driver, Date: time.Now().UTC().Format(time.RFC3339),
				Pages: pages, Chunk: chunk, Reps: reps, StrideCycles: map[int]float64{}}
			progress := progressBar("memmap")
			strides := []int{4, 8, 16, 32, 64, 128, 256, 512}
			step, total := 0, 2+len(strides)+scans+3
			tick := func() { step++; progress(step, total) }
			if r.L2HitCycles, err = p.Chase(memmap.RandomCycle(4<<20, 128, 1), 20000); err != nil {
				return err
			}
			tick()
			if r.DRAMCycles, err = p.Chase(memmap.RandomCycle(512<<20, 128, 2), 20000); err != nil {
				return err
			}
			tick()
			for _, s := range strides {
				if r.StrideCycles[s], err = p.Chase(memmap.Sequential(256<<20, s), 20000); err != nil {
					return err
				}
				tick()
			}
			pool, err := p.Pool(pages)
			if err != nil {
				return fmt.Errorf("mapping %d pages: %w", pages, err)
			}
			r.PageBytes = pool.Size
			for i := range scans {
				s, err := p.ScanL2(pool, chunk, reps)
				if err != nil {
					return err
				}
				m, err := memmap.Analyze(s)
				if err != nil {
					return fmt.Errorf("scan %d: %w", i, err)
				}
				r.Maps = append(r.Maps, m)
				r.Agreement = append(r.Agreement, memmap.Agreement(r.Maps[0], m))
				if keepRaw {
					r.Scans = append(r.Scans, s)
				}
				tick()
			}
			if learnMiB > 0 {
				if err := learn(p, &r, learnMiB, pairBytes, evict, tick); err != nil {
					return err
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
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			b, err := json.MarshalIndent(r, "", " ")
			if err != nil {
				return err
			}
			path := filepath.Join(outDir, "memmap.json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "L2 hit (random, 4 MiB)\t%.0f cycles\n", r.L2HitCycles)
			fmt.Fprintf(tw, "DRAM (random, 512 MiB)\t%.0f cycles\n", r.DRAMCycles)
			for _, s := range strides {
				fmt.Fprintf(tw, "sequential, stride %d B\t%.0f cycles per load\n", s, r.StrideCycles[s])
			}
			for i, m := range r.Maps {
				fmt.Fprintf(tw, "scan %d: %d chunks of %d B in %d pages of %d B\tnear %.0f / far %.0f cycles; colours %.1f%% / %.1f%%; %d undecided; runs: shortest %d, most common %d chunks; agreement with scan 0 %.2f%%\n",
					i, len(m.Colour), chunk, pages, r.PageBytes, m.NearCycles, m.FarCycles, 100*m.Share[0], 100*m.Share[1], m.Undecided, m.MinRun, m.CommonRun, 100*r.Agreement[i])
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
				if err := memmap.PlotStructure(*st, r.Device, filepath.Join(outDir, "memmap")); err != nil {
					return err
				}
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
		},
	}
	c.Flags().IntVar(&pages, "pages", 16, "physical pages in the pool")
	c.Flags().IntVar(&chunk, "chunk", 1024, "bytes per labelled chunk")
	c.Flags().IntVar(&reps, "reps", 8, "timed L2 hits per chunk and SM")
	c.Flags().IntVar(&scans, "scans", 2, "labellings of the pool")
	c.Flags().BoolVar(&keepRaw, "raw", false, "keep every timing in the JSON (large)")
	c.Flags().IntVar(&pairBytes, "pair-bytes", 1<<20, "time DRAM load pairs from the second pool's start to every line within this many bytes (0: none)")
	c.Flags().IntVar(&learnMiB, "learn-mib", 4, "MiB whose lines are sorted into slices and DRAM groups (0: skip slices, groups, L2 sets and pairs)")
	c.Flags().BoolVar(&evict, "evict", true, "find the L2 set of a line")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "carve-memmap", "directory for memmap.json")
	addOutputFlag(c, &out)
	return c
}

// learnPages is the second pool of carve memmap: room for an eviction
// sweep of twice the H100's L2 after the first MiB.
const learnPages = 64

// learn runs memmap's slice, group, pair and L2-set probes on a second
// pool.
func learn(p *memmap.Probe, r *memmapResult, mib, pairBytes int, evict bool, tick func()) error {
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
	if n := min(pairBytes, r.LearnBytes) / memmap.LineBytes; n > 1 {
		offs := make([]uint64, n-1)
		for i := range offs {
			offs[i] = uint64((i + 1) * memmap.LineBytes)
		}
		if r.PairCycles, err = p.PairLatency(pool.Base, offs, 4); err != nil {
			return err
		}
		by := map[string][]float64{}
		l := st.Classes.Label
		for i, o := range offs {
			a, b := l[0], l[o/memmap.LineBytes]
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
		r.PairByRelation = map[string]bench.Stats{}
		for rel, xs := range by {
			r.PairByRelation[rel] = bench.Summarize(xs)
		}
	}
	tick()
	if evict {
		threshold := (r.L2HitCycles + r.DRAMCycles) / 2
		ev := p.Evicted(pool, 0, threshold, 3)
		const from = 1 << 20
		if r.EvictionSet, err = memmap.EvictionSet(ev, from, from+96<<20, memmap.LineBytes, 64); err != nil {
			return fmt.Errorf("L2 set of line 0: %w", err)
		}
		if r.Essential, err = memmap.Essential(ev, from, r.EvictionSet); err != nil {
			return err
		}
	}
	tick()
	return nil
}

// groupSlowdowns averages the interference matrix: a class's slowdown of
// itself, of the other classes of its group, and of other groups'.
func groupSlowdowns(s memmap.Structure) (in [2]float64, out float64) {
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

// openProbe loads device's topology and memmap's kernels on it.
func openProbe(device int) (*topo.Topology, *memmap.Probe, error) {
	t, _, err := loadTopology(device, false)
	if err != nil {
		return nil, nil, err
	}
	p, err := memmap.Open(device)
	return t, p, err
}
