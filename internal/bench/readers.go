// carve bench readers: FGPU's Fig. 8, one SM loading lines of one L2 slice
// from DRAM while more and more SMs read the same or other slices, with its
// plot and table.

package bench

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// readersTable prints the primary reader's time per load against the
// number of secondary readers, one column per case (FGPU's Fig. 8).
func readersTable(tw io.Writer, r *report.Result) {
	fmt.Fprint(tw, "SECONDARY SMs")
	for _, s := range r.Series {
		fmt.Fprintf(tw, "\t%s", s.Mechanism)
	}
	fmt.Fprintln(tw, "\t(primary's DRAM load, mean cycles)")
	if len(r.Series) == 0 {
		return
	}
	for k, p := range r.Series[0].Points {
		fmt.Fprintf(tw, "%d", p.SMs)
		for _, s := range r.Series {
			fmt.Fprintf(tw, "\t%.0f", s.Points[k].Stats.Mean)
		}
		fmt.Fprintln(tw)
	}
}

// plotReaders draws the primary's mean load time against the secondary
// SMs, one line per case, to DIR/readers.{png,svg}.
func plotReaders(r *report.Result, dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("one SM's DRAM loads beside SMs loading other lines from DRAM, %s", r.Device)
	p.X.Label.Text = "SMs loading the secondary lines"
	p.Y.Label.Text = "primary's DRAM load, mean (cycles)"
	for i, s := range r.Series {
		pts := make(plotter.XYs, len(s.Points))
		for j, q := range s.Points {
			pts[j] = plotter.XY{X: float64(q.SMs), Y: q.Stats.Mean}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.Mechanism, l, sc)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return report.SavePanels([]*plot.Plot{p}, 1, 8*vg.Inch, 5*vg.Inch, filepath.Join(dir, r.Benchmark))
}

// ReadersOptions are carve bench readers' flags.
type ReadersOptions struct {
	Reps, Threads, Device        int
	PrimaryLines, SecondaryLines int
	Progress                     Progress
}

// Check rejects options that cannot run, before the GPU is asked.
func (o ReadersOptions) Check() error {
	if o.Reps < 1 || o.Threads < 1 || o.Threads > 1024 || o.PrimaryLines < 1 || o.SecondaryLines < 1 {
		return errors.New("--reps, --lines, --secondary-lines: at least 1; --threads: 1 to 1024")
	}
	return nil
}

// Readers is FGPU's Fig. 8: it learns the L2 slices and DRAM groups of a
// pool, then times one SM loading lines of one slice from DRAM while 0 to
// all other SMs load, without pause, other lines of the same slice, of the
// same group, of other groups, or of anywhere.
func Readers(o ReadersOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	reps, threads, primaryLines, secondaryLines := o.Reps, o.Threads, o.PrimaryLines, o.SecondaryLines
	t, p, err := openProbe(o.Device)
	if err != nil {
		return nil, err
	}
	pool, err := p.Pool(8)
	if err != nil {
		return nil, err
	}
	const learnt = 4 << 20
	st, err := p.Learn(pool, learnt)
	if err != nil {
		return nil, err
	}
	own := st.Classes.Members(0, primaryLines+secondaryLines)
	if len(own) < primaryLines+1 {
		return nil, fmt.Errorf("slice 0 has %d lines in the learnt %d MiB, %d wanted", len(own), learnt>>20, primaryLines+1)
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
	r := newResult("readers", t, map[string]any{"primary_lines": len(primary), "reps": reps, "threads_per_secondary_sm": threads,
		"slices": len(st.Classes.Refs), "dram_groups": st.Groups, "group_of_slice": st.Group, "primary_slice": 0})
	var skipped []string
	alone, err := p.Readers(pool, primary, nil, 0, threads, reps)
	if err != nil {
		return nil, err
	}
	for i, cs := range cases {
		if len(cs.lines) == 0 { // every group one slice: no "same group"
			skipped = append(skipped, cs.name)
			continue
		}
		s := report.Series{Mechanism: cs.name, Measured: true, Note: fmt.Sprintf("%d secondary lines", len(cs.lines))}
		for _, n := range counts {
			got := alone
			if n > 0 {
				if got, err = p.Readers(pool, primary, cs.lines, n, threads, reps); err != nil {
					return nil, err
				}
			}
			xs := make([]float64, len(got))
			for j, v := range got {
				xs[j] = float64(v)
			}
			s.Points = append(s.Points, report.Point{SMs: n, Unit: "cycles", Stats: stats.Summarize(xs)})
		}
		r.Series = append(r.Series, s)
		o.Progress.report(i+1, len(cases))
	}
	r.Params["cases_without_lines"] = skipped
	return r, nil
}
