package bench

import (
	"fmt"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// readersTable prints the primary reader's time per load against the
// number of secondary readers, one column per case (FGPU's Fig. 8).
func readersTable(tw io.Writer, r *Result) {
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

// PlotReaders draws the primary's mean load time against the secondary
// SMs, one line per case, to DIR/readers.{png,svg}.
func PlotReaders(r *Result, dir string) error {
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
	return SavePanels([]*plot.Plot{p}, 1, 8*vg.Inch, 5*vg.Inch, filepath.Join(dir, r.Benchmark))
}
