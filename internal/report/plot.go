// The pieces results' plots are drawn with: box plots, panels laid out in
// rows, and a plot saved as PNG and SVG.

package report

import (
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/carve-gpu/carve/internal/stats"
)

// AddNew appends v to list unless list has it: the distinct values in the
// order they first appear.
func AddNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// Boxes draws one box per stats at x = 0, 1, ...: the box spans p25 to
// p75 with a bar at the median, the whisker min to max, a tick at p99.
func Boxes(p *plot.Plot, names []string, sts []stats.Stats) error {
	line := func(pts plotter.XYs, width vg.Length) error {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Width = width
		p.Add(l)
		return nil
	}
	for i, st := range sts {
		x := float64(i)
		box, err := plotter.NewPolygon(plotter.XYs{{X: x - 0.3, Y: st.P25}, {X: x + 0.3, Y: st.P25}, {X: x + 0.3, Y: st.P75}, {X: x - 0.3, Y: st.P75}})
		if err != nil {
			return err
		}
		box.Color = plotutil.Color(2)
		p.Add(box)
		for _, seg := range []struct {
			pts plotter.XYs
			w   vg.Length
		}{
			{plotter.XYs{{X: x, Y: st.Min}, {X: x, Y: st.Max}}, vg.Points(1)},
			{plotter.XYs{{X: x - 0.3, Y: st.P50}, {X: x + 0.3, Y: st.P50}}, vg.Points(2)},
			{plotter.XYs{{X: x - 0.15, Y: st.P99}, {X: x + 0.15, Y: st.P99}}, vg.Points(1)},
		} {
			if err := line(seg.pts, seg.w); err != nil {
				return err
			}
		}
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1, 0
	return nil
}

// SavePanels lays panels out in rows of cols, each w x h, and writes
// base.png and base.svg.
func SavePanels(panels []*plot.Plot, cols int, w, h vg.Length, base string) error {
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range cols {
			if k := i*cols + j; k < len(panels) {
				grid[i][j] = panels[k]
			}
		}
	}
	for _, ext := range []string{"png", "svg"} {
		var c vg.CanvasWriterTo
		W, H := w*vg.Length(cols), h*vg.Length(rows)
		if ext == "png" {
			c = vgimg.PngCanvas{Canvas: vgimg.New(W, H)}
		} else {
			c = vgsvg.New(W, H)
		}
		t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(10), PadY: vg.Points(10),
			PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
		canvases := plot.Align(grid, t, draw.New(c))
		for i := range grid {
			for j, p := range grid[i] {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
		f, err := os.Create(base + "." + ext)
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Save writes one plot as base.png and base.svg, w x h.
func Save(p *plot.Plot, w, h vg.Length, base string) error {
	for _, ext := range []string{"png", "svg"} {
		if err := p.Save(w, h, base+"."+ext); err != nil {
			return err
		}
	}
	return nil
}

// Base is DIR/NAME, the name plots of r are written under without extension.
func (r *Result) Base(dir string) string { return filepath.Join(dir, r.Benchmark) }
