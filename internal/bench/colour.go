// carve bench colour: FGPU's CP-against-CMP experiment with carve's memory
// map, a victim on the TPCs of one L2 side beside a competitor, its pages
// coloured or not.

package bench

import (
	"errors"
	"fmt"

	"github.com/carve-gpu/carve/internal/colour"
	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/memmap"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/topo"
)

// ColourOptions are carve bench colour's flags.
type ColourOptions struct {
	Pages, Reps, Device int
	MiB, SmallMiB       float64 // per array of the large and the small victim
	Progress            Progress
	Labelling           func(done, total int) // labelling the pool by slice, the long step
}

// Check rejects options that cannot run, before the GPU is asked.
func (o ColourOptions) Check() error {
	if o.Pages < 2 || o.Reps < 1 || o.MiB <= 0 {
		return errors.New("--pages: at least 2; --reps and --mib: positive")
	}
	return nil
}

// Colour runs FGPU's CP-against-CMP experiment with carve's memory map: a
// vector-add victim on the TPCs of one L2 side beside a vector-add
// interferer on the other's, with plain arrays (CP), arrays coloured by L2
// partition or by DRAM group (CMP, through line tables), plain arrays
// reached through identity line tables (the translation's own cost), and
// the L2 persisting set-aside; each alone and together, for a victim that
// streams through DRAM and one that fits in the set-aside. Victim and
// interferer are two streams of this process, each launch confined to its
// TPCs by carve's hook.
func Colour(o ColourOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	pages, reps, mib, smallMiB := o.Pages, o.Reps, o.MiB, o.SmallMiB
	t, p, err := openProbe(o.Device)
	if err != nil {
		return nil, err
	}
	step, total := 0, 5+10
	tick := func() { step++; o.Progress.report(step, total) }
	// the sides, from a small scan by every SM
	small, err := p.Pool(2)
	if err != nil {
		return nil, err
	}
	scan, err := p.ScanL2(small, 1024, 8)
	if err != nil {
		return nil, err
	}
	m, err := memmap.Analyze(scan)
	if err != nil {
		return nil, err
	}
	var sets [2]partition.Set
	var masks [2]topo.Disable
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
			return nil, fmt.Errorf("no TPC lies wholly on side %d of the L2", s)
		}
		sets[s] = partition.Of(sets[s])
		if masks[s], err = partition.Mask(t, sets[s]); err != nil {
			return nil, err
		}
	}
	tick()
	pool, err := p.Pool(pages)
	if err != nil {
		return nil, fmt.Errorf("mapping %d pages: %w", pages, err)
	}
	labels, gap, err := p.LabelLines(pool, masks, min(sms[0], sms[1]), 8)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	// colours by DRAM group: the slices learnt from the pool's first
	// MiB, every chunk of the pool labelled with its slice's group
	st, err := p.Learn(pool, 4<<20)
	if err != nil {
		return nil, err
	}
	tick()
	groupLines, err := p.GroupLines(pool, st, st.Classes.CommonRun*memmap.LineBytes, o.Labelling)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	// check the coloured kernel against the CPU on lines of its own
	var check [3][]uint32
	for k := range check {
		if check[k], err = cp.Take(0, 4*1000); err != nil {
			return nil, err
		}
	}
	if err := p.CheckColoured(pool, check[0], check[1], check[2], 1000); err != nil {
		return nil, err
	}
	if err := pool.Base.Fill32(0, pool.Size*pool.Count/4); err != nil {
		return nil, err
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
		return nil, err
	}
	tick()
	r := newResult("colour", t, map[string]any{"victim_tpcs": sets[0].String(), "interferer_tpcs": sets[1].String(), "pool_pages": pages,
		"page_bytes": pool.Size, "line_bytes": memmap.LineBytes, "floats_per_array": sizes, "reps": reps,
		"label_gap_cycles": gap, "colour_bytes": colourBytes, "lines": len(labels),
		"dram_groups": st.Groups, "slices": len(st.Classes.Refs), "group_of_slice": st.Group, "colour_of_group": groupColour,
		"group_colour_bytes": []int{gp.Free(0), gp.Free(1)},
		"set_aside_bytes":    setAside, "max_window_bytes": window})
	outlasted := map[string]bool{}
	run := func(victimName, name string, victim, interferer *memmap.Vadd) error {
		alone, _, err := p.CoRun(victim, masks[0], nil, masks[1], reps)
		if err != nil {
			return err
		}
		r.Series = append(r.Series, report.Series{Mechanism: name + ", alone", Victim: victimName, Measured: true,
			Points: []report.Point{{Stats: stats.Summarize(alone)}}})
		// long enough to outlast the victim's runs (the interferer is
		// the large vector add: no faster than the victim)
		interferer.Loops = int32(2*reps + 20)
		with, ok, err := p.CoRun(victim, masks[0], interferer, masks[1], reps)
		if err != nil {
			return err
		}
		outlasted[victimName+", "+name] = ok
		r.Series = append(r.Series, report.Series{Mechanism: name + " + interferer", Victim: victimName, Measured: true,
			Points: []report.Point{{Stats: stats.Summarize(with)}}})
		tick()
		return nil
	}
	iPlain, err := plain(sizes[0])
	if err != nil {
		return nil, err
	}
	iCol, err := coloured(cp, 1, sizes[0])
	if err != nil {
		return nil, err
	}
	iGroup, err := coloured(gp, 1, sizes[0])
	if err != nil {
		return nil, err
	}
	for _, n := range sizes {
		name := fmt.Sprintf("vadd 3 x %d MiB", 4*n>>20)
		vPlain, err := plain(n)
		if err != nil {
			return nil, err
		}
		vCol, err := coloured(cp, 0, n)
		if err != nil {
			return nil, err
		}
		vGroup, err := coloured(gp, 0, n)
		if err != nil {
			return nil, err
		}
		if err := run(name, "CP", vPlain, iPlain); err != nil {
			return nil, err
		}
		if err := run(name, "CMP, L2 partitions", vCol, iCol); err != nil {
			return nil, err
		}
		if err := run(name, "CMP, DRAM groups", vGroup, iGroup); err != nil {
			return nil, err
		}
		// the table's own cost: plain arrays reached through tables
		// that map every line to itself
		ident := make([]uint32, n/32)
		for i := range ident {
			ident[i] = uint32(i)
		}
		tab, err := cuda.Copy(ident)
		if err != nil {
			return nil, err
		}
		vTab := *vPlain
		vTab.TA, vTab.TB, vTab.TC = tab, tab, tab
		if err := run(name, "CP through line tables", &vTab, iPlain); err != nil {
			return nil, err
		}
		win := min(3*4*n, window)
		ratio := min(float32(1), float32(setAside)/float32(win))
		err = p.WithSetAside(setAside, vPlain.A, win, ratio, func() error {
			return run(name, fmt.Sprintf("CP + L2 set-aside %d MiB", setAside>>20), vPlain, iPlain)
		})
		if err != nil {
			return nil, fmt.Errorf("set-aside: %w", err)
		}
	}
	r.Params["interferer_outlasted_victim"] = outlasted
	return r, nil
}

// openProbe loads device's topology and memmap's kernels on it.
func openProbe(device int) (*topo.Topology, *memmap.Probe, error) {
	t, _, err := discover.Topology(device, false)
	if err != nil {
		return nil, nil, err
	}
	p, err := memmap.Open(device)
	return t, p, err
}
