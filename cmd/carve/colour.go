package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/colour"
	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/memmap"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

func newColourCmd() *cobra.Command {
	var pages, reps, device int
	var mib, smallMiB float64
	var outDir, out string
	c := &cobra.Command{
		Use:   "colour",
		Short: "Does colouring memory by L2 partition isolate a memory-bound victim? (CP against CMP)",
		Long: `colour runs FGPU's experiment on this GPU with carve's memory map. It finds
the two sides of SMs that see the two L2 partitions as near (carve memmap),
labels every 128-byte line of a pool of physical pages with its partition,
and times a vector-add victim on the TPCs of one side while a vector-add
interferer runs without pause on the TPCs of the other:

  CP            compute partitioning only: both on plain arrays
  CMP, L2 partitions
                compute and memory partitioning: the victim's arrays only in
                lines of the partition near its side, the interferer's only
                in the other's
  CMP, DRAM groups
                the victim's arrays only in lines of one half of the DRAM
                groups (carve memmap's slices and groups, learnt on this
                pool), the interferer's only in the other half
  L2 set-aside  CP, with the most L2 the driver allows set aside for the
                victim's arrays through an access policy window

each alone and together, for a victim that streams through DRAM (--mib)
and one whose arrays fit in the set-aside (--small-mib); and CP through line
tables that map every line to itself, which prices the translation alone. Coloured arrays are reached through a table of
lines (one extra load per 32 floats), which the CMP-alone time includes.
The victim and the interferer are two streams of this process, each
launch confined to its TPCs by carve's hook.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if pages < 2 || reps < 1 || mib <= 0 {
				return errors.New("--pages: at least 2; --reps and --mib: positive")
			}
			t, p, err := openProbe(device)
			if err != nil {
				return err
			}
			progress := progressBar("colour")
			step, total := 0, 5+10
			tick := func() { step++; progress(step, total) }
			// the sides, from a small scan by every SM
			small, err := p.Pool(2)
			if err != nil {
				return err
			}
			scan, err := p.ScanL2(small, 1024, 8)
			if err != nil {
				return err
			}
			m, err := memmap.Analyze(scan)
			if err != nil {
				return err
			}
			var sets [2]partition.Set
			var masks [2]topo.Mask
			sms := [2]int{}
			for _, tpc := range t.TPCs {
				s, ok := m.Side[tpc.SMs[0]]
				if !ok {
					continue
				}
				same := true
				for _, sm := range tpc.SMs {
					same = same && m.Side[sm] == s
				}
				if same {
					sets[s] = append(sets[s], tpc.Index)
					sms[s] += len(tpc.SMs)
				}
			}
			for s := range 2 {
				if len(sets[s]) == 0 {
					return fmt.Errorf("no TPC lies wholly on side %d of the L2", s)
				}
				sets[s] = partition.Of(sets[s])
				if masks[s], err = partition.Mask(t, sets[s]); err != nil {
					return err
				}
			}
			tick()
			pool, err := p.Pool(pages)
			if err != nil {
				return fmt.Errorf("mapping %d pages: %w", pages, err)
			}
			labels, gap, err := p.LabelLines(pool, masks, min(sms[0], sms[1]), 8)
			if err != nil {
				return err
			}
			tick()
			cp := colour.New(labels, memmap.LineBytes)
			colourBytes := []int{cp.Free(0), cp.Free(1)}
			sizes := []int{int(mib * (1 << 20) / 4), int(smallMiB * (1 << 20) / 4)}
			need := 0
			for i := range sizes {
				sizes[i] -= sizes[i] % 32
				need += 3 * 4 * sizes[i]
			}
			// checked before the long labelling by slice
			enough := func(pc *colour.Pool, what string) error {
				for c := range 2 {
					if pc.Free(c) < need+3*4*1024 {
						return fmt.Errorf("%s colour %d has %d MiB in the pool, %d are needed: give more --pages or fewer --mib",
							what, c, pc.Free(c)>>20, need>>20)
					}
				}
				return nil
			}
			if err := enough(cp, "L2 partition"); err != nil {
				return err
			}
			// colours by DRAM group: the slices learnt from the pool's first
			// MiB, every chunk of the pool labelled with its slice's group
			st, err := p.Learn(pool, 4<<20)
			if err != nil {
				return err
			}
			tick()
			groupLines, err := p.GroupLines(pool, st, st.Classes.CommonRun*memmap.LineBytes, progressBar("labelling the pool by slice"))
			if err != nil {
				return err
			}
			groupColour := memmap.SplitGroups(st.GroupSizes())
			for l, g := range groupLines {
				if g >= 0 {
					groupLines[l] = groupColour[g]
				}
			}
			gp := colour.New(groupLines, memmap.LineBytes)
			tick()
			if err := enough(gp, "DRAM group"); err != nil {
				return err
			}
			// check the coloured kernel against the CPU on lines of its own
			var check [3][]uint32
			for k := range check {
				if check[k], err = cp.Take(0, 4*1000); err != nil {
					return err
				}
			}
			if err := p.CheckColoured(pool, check[0], check[1], check[2], 1000); err != nil {
				return err
			}
			if err := pool.Base.Fill32(0, pool.Size*pool.Count/4); err != nil {
				return err
			}
			coloured := func(cp *colour.Pool, c, n int) (*memmap.Vadd, error) {
				v := &memmap.Vadd{A: pool.Base, B: pool.Base, C: pool.Base, N: uint64(n), Loops: 1}
				for _, tab := range []*cuda.DevPtr{&v.TA, &v.TB, &v.TC} {
					lines, err := cp.Take(c, 4*n)
					if err != nil {
						return nil, err
					}
					if *tab, err = cuda.Copy(lines); err != nil {
						return nil, err
					}
				}
				return v, nil
			}
			// plain arrays in one allocation, so that one access window covers them
			plain := func(n int) (*memmap.Vadd, error) {
				base, err := cuda.Alloc(3 * 4 * n)
				if err != nil {
					return nil, err
				}
				if err := base.Fill32(0, 3*n); err != nil {
					return nil, err
				}
				return &memmap.Vadd{A: base, B: base + cuda.DevPtr(4*n), C: base + cuda.DevPtr(8*n), N: uint64(n), Loops: 1}, nil
			}
			setAside, window, err := p.MaxSetAside()
			if err != nil {
				return err
			}
			tick()
			r := &bench.Result{Benchmark: "colour", Device: t.Device, UUID: t.UUID, Driver: t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"victim_tpcs": sets[0].String(), "interferer_tpcs": sets[1].String(), "pool_pages": pages,
					"page_bytes": pool.Size, "line_bytes": memmap.LineBytes, "floats_per_array": sizes, "reps": reps,
					"label_gap_cycles": gap, "colour_bytes": colourBytes, "lines": len(labels),
					"dram_groups": st.Groups, "slices": len(st.Classes.Refs), "group_of_slice": st.Group, "colour_of_group": groupColour,
					"group_colour_bytes": []int{gp.Free(0), gp.Free(1)},
					"set_aside_bytes":    setAside, "max_window_bytes": window}}
			outlasted := map[string]bool{}
			run := func(victimName, name string, victim, interferer *memmap.Vadd) error {
				alone, _, err := p.CoRun(victim, masks[0], nil, masks[1], reps)
				if err != nil {
					return err
				}
				r.Series = append(r.Series, bench.Series{Mechanism: name + ", alone", Victim: victimName, Measured: true,
					Points: []bench.Point{{Stats: bench.Summarize(alone)}}})
				// long enough to outlast the victim's runs (the interferer is
				// the large vector add: no faster than the victim)
				interferer.Loops = int32(2*reps + 20)
				with, ok, err := p.CoRun(victim, masks[0], interferer, masks[1], reps)
				if err != nil {
					return err
				}
				outlasted[victimName+", "+name] = ok
				r.Series = append(r.Series, bench.Series{Mechanism: name + " + interferer", Victim: victimName, Measured: true,
					Points: []bench.Point{{Stats: bench.Summarize(with)}}})
				tick()
				return nil
			}
			iPlain, err := plain(sizes[0])
			if err != nil {
				return err
			}
			iCol, err := coloured(cp, 1, sizes[0])
			if err != nil {
				return err
			}
			iGroup, err := coloured(gp, 1, sizes[0])
			if err != nil {
				return err
			}
			for _, n := range sizes {
				name := fmt.Sprintf("vadd 3 x %d MiB", 4*n>>20)
				vPlain, err := plain(n)
				if err != nil {
					return err
				}
				vCol, err := coloured(cp, 0, n)
				if err != nil {
					return err
				}
				vGroup, err := coloured(gp, 0, n)
				if err != nil {
					return err
				}
				if err := run(name, "CP", vPlain, iPlain); err != nil {
					return err
				}
				if err := run(name, "CMP, L2 partitions", vCol, iCol); err != nil {
					return err
				}
				if err := run(name, "CMP, DRAM groups", vGroup, iGroup); err != nil {
					return err
				}
				// the table's own cost: plain arrays reached through tables
				// that map every line to itself
				ident := make([]uint32, n/32)
				for i := range ident {
					ident[i] = uint32(i)
				}
				tab, err := cuda.Copy(ident)
				if err != nil {
					return err
				}
				vTab := *vPlain
				vTab.TA, vTab.TB, vTab.TC = tab, tab, tab
				if err := run(name, "CP through line tables", &vTab, iPlain); err != nil {
					return err
				}
				win := min(3*4*n, window)
				ratio := min(float32(1), float32(setAside)/float32(win))
				err = p.WithSetAside(setAside, vPlain.A, win, ratio, func() error {
					return run(name, fmt.Sprintf("CP + L2 set-aside %d MiB", setAside>>20), vPlain, iPlain)
				})
				if err != nil {
					return fmt.Errorf("set-aside: %w", err)
				}
			}
			r.Params["interferer_outlasted_victim"] = outlasted
			return finish(cmd, r, outDir, out)
		},
	}
	c.Flags().IntVar(&pages, "pages", 1024, "physical 2 MiB pages in the labelled pool")
	c.Flags().Float64Var(&mib, "mib", 128, "MiB per array of the large victim and of the interferer (three arrays each)")
	c.Flags().Float64Var(&smallMiB, "small-mib", 8, "MiB per array of the small victim, whose arrays fit in the L2 set-aside")
	c.Flags().IntVar(&reps, "reps", 200, "victim runs timed per setup")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &out)
	return c
}

func newReadersCmd() *cobra.Command {
	var reps, threads, device, primaryLines, secondaryLines int
	var outDir, out string
	c := &cobra.Command{
		Use:   "readers",
		Short: "FGPU's Fig. 8: one SM's DRAM loads beside SMs loading lines of the same slice, group, or another group",
		Long: `readers learns the L2 slices and DRAM groups of a pool (as carve memmap
does), then times one SM loading --lines lines of one slice from DRAM, one
at a time, while 0 to all other SMs load other lines from DRAM without
pause (--threads each), the secondary lines being

  same slice        other lines of the primary's slice
  same group        lines of the other slices of the primary's DRAM group
                    (left out where every group is a single slice)
  other groups      lines of slices of the other groups
  anywhere          lines of every slice (the primary's too), as uncoloured
                    memory would be

The primary's mean load time against the number of secondary SMs says
which colouring keeps a tenant's DRAM accesses apart from its neighbours'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if reps < 1 || threads < 1 || threads > 1024 || primaryLines < 1 || secondaryLines < 1 {
				return errors.New("--reps, --lines, --secondary-lines: at least 1; --threads: 1 to 1024")
			}
			t, p, err := openProbe(device)
			if err != nil {
				return err
			}
			pool, err := p.Pool(8)
			if err != nil {
				return err
			}
			const learnt = 4 << 20
			st, err := p.Learn(pool, learnt)
			if err != nil {
				return err
			}
			own := st.Classes.Members(0, primaryLines+secondaryLines)
			if len(own) < primaryLines+1 {
				return fmt.Errorf("slice 0 has %d lines in the learnt %d MiB, %d wanted", len(own), learnt>>20, primaryLines+1)
			}
			primary := own[:primaryLines]
			// round robin over the chosen classes, so that every one is loaded
			mix := func(keep func(k int) bool) []uint64 {
				var per [][]uint64
				for k := range st.Classes.Refs {
					if keep(k) {
						per = append(per, st.Classes.Members(k, secondaryLines))
					}
				}
				var lines []uint64
				for i := 0; len(lines) < secondaryLines; i++ {
					added := false
					for _, m := range per {
						if i < len(m) && len(lines) < secondaryLines {
							lines, added = append(lines, m[i]), true
						}
					}
					if !added {
						break
					}
				}
				return lines
			}
			g0 := st.Group[0]
			cases := []struct {
				name  string
				lines []uint64
			}{
				{"same slice", own[primaryLines:]},
				{"same group", mix(func(k int) bool { return k != 0 && st.Group[k] == g0 })},
				{"other groups", mix(func(k int) bool { return st.Group[k] != g0 })},
				{"anywhere", mix(func(int) bool { return true })},
			}
			counts := []int{0, 1, 2, 4, 8, 16, 32, 64, p.SMs() - 1}
			r := &bench.Result{Benchmark: "readers", Device: t.Device, UUID: t.UUID, Driver: t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"primary_lines": len(primary), "reps": reps, "threads_per_secondary_sm": threads,
					"slices": len(st.Classes.Refs), "dram_groups": st.Groups, "group_of_slice": st.Group, "primary_slice": 0}}
			progress := progressBar("readers")
			var skipped []string
			alone, err := p.Readers(pool, primary, nil, 0, threads, reps)
			if err != nil {
				return err
			}
			for i, cs := range cases {
				if len(cs.lines) == 0 { // every group one slice: no "same group"
					skipped = append(skipped, cs.name)
					continue
				}
				s := bench.Series{Mechanism: cs.name, Measured: true, Note: fmt.Sprintf("%d secondary lines", len(cs.lines))}
				for _, n := range counts {
					got := alone
					if n > 0 {
						if got, err = p.Readers(pool, primary, cs.lines, n, threads, reps); err != nil {
							return err
						}
					}
					xs := make([]float64, len(got))
					for j, v := range got {
						xs[j] = float64(v)
					}
					s.Points = append(s.Points, bench.Point{SMs: n, Unit: "cycles", Stats: bench.Summarize(xs)})
				}
				r.Series = append(r.Series, s)
				progress(i+1, len(cases))
			}
			r.Params["cases_without_lines"] = skipped
			return finish(cmd, r, outDir, out)
		},
	}
	c.Flags().IntVar(&primaryLines, "lines", 64, "lines the primary SM loads")
	c.Flags().IntVar(&secondaryLines, "secondary-lines", 512, "lines the secondary SMs load")
	c.Flags().IntVar(&threads, "threads", 32, "threads per secondary SM")
	c.Flags().IntVar(&reps, "reps", 16, "timed loads per primary line")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &out)
	return c
}
