package bench

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
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
)

// PlotGranularity draws median time against SMs per measured series, with
// the documented MiG sizes as vertical marks, to DIR/granularity.{png,svg}.
func PlotGranularity(r *Result, dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GEMM time by partition size, %s", r.Device)
	p.X.Label.Text = "SMs in the partition"
	p.Y.Label.Text = "GEMM time, median (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	top := 0.0
	for i, s := range r.Series {
		if !s.Measured {
			continue
		}
		pts := make(plotter.XYs, len(s.Points))
		for j, q := range s.Points {
			pts[j] = plotter.XY{X: float64(q.SMs), Y: q.Stats.P50}
			top = max(top, q.Stats.P50)
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.Mechanism, l, sc)
	}
	for _, s := range r.Series {
		if s.Measured {
			continue
		}
		for i, q := range s.Points {
			l, err := plotter.NewLine(plotter.XYs{{X: float64(q.SMs), Y: top / 100}, {X: float64(q.SMs), Y: top}})
			if err != nil {
				return err
			}
			l.Color = color.Gray{Y: 150}
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(l)
			if i == 0 {
				p.Legend.Add(s.Mechanism+" sizes (documented, not measured)", l)
			}
		}
	}
	p.Legend.Top = true
	for _, ext := range []string{"png", "svg"} {
		if err := p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, r.Benchmark+"."+ext)); err != nil {
			return err
		}
	}
	return nil
}

// PlotEnforcement draws one panel per victim with a box per setup (see
// addBoxes) and the victim's reference time (alone / share) as a dashed
// line, to DIR/enforcement.{png,svg}.
func PlotEnforcement(r *Result, dir string) error {
	refs, _ := r.Params["scaled_alone_ms"].(map[string]any)
	var victims []string
	for _, s := range r.Series {
		victims = addNew(victims, s.Victim)
	}
	var panels []*plot.Plot
	for _, v := range victims {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("victim %s beside competitors, %s (box p25-p75, bar p50, tick p99, whisker min-max)", v, r.Device)
		p.Y.Label.Text = "victim time per launch (ms)"
		var names []string
		var stats []Stats
		for _, s := range r.Series {
			if s.Victim == v {
				names = append(names, s.Mechanism)
				stats = append(stats, s.Points[0].Stats)
			}
		}
		if err := addBoxes(p, names, stats); err != nil {
			return err
		}
		if ref, ok := refs[v].(float64); ok {
			l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: ref}, {X: float64(len(names)) - 0.5, Y: ref}})
			if err != nil {
				return err
			}
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			l.Color = color.RGBA{R: 200, A: 255}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("alone / share = %.3f ms", ref), l)
			p.Legend.Top = true
		}
		panels = append(panels, p)
	}
	return SavePanels(panels, 1, 11*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark))
}

// PlotOverhead draws one panel per measured quantity (the points' labels)
// with a box per mechanism, to DIR/overhead.{png,svg}.
func PlotOverhead(r *Result, dir string) error {
	var labels []string
	for _, s := range r.Series {
		for _, pt := range s.Points {
			labels = addNew(labels, pt.Label)
		}
	}
	var panels []*plot.Plot
	for _, l := range labels {
		p := plot.New()
		p.Title.Text = l
		var names []string
		var stats []Stats
		for _, s := range r.Series {
			for _, pt := range s.Points {
				if pt.Label == l {
					names = append(names, s.Mechanism)
					stats = append(stats, pt.Stats)
					p.Y.Label.Text = cmp.Or(pt.Unit, "ms")
				}
			}
		}
		if err := addBoxes(p, names, stats); err != nil {
			return err
		}
		lo, hi := math.Inf(1), 0.0
		for _, st := range stats {
			lo, hi = min(lo, st.Min), max(hi, st.Max)
		}
		if hi > 5*lo { // rare slow launches would flatten the boxes
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Title.Text += " (log scale)"
		}
		panels = append(panels, p)
	}
	return SavePanels(panels, len(panels), 6*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark))
}

// addNew appends v to list unless list has it: the distinct values in the
// order they first appear.
func addNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// addBoxes draws one box per stats at x = 0, 1, ...: the box spans p25 to
// p75 with a bar at the median, the whisker min to max, a tick at p99.
func addBoxes(p *plot.Plot, names []string, stats []Stats) error {
	line := func(pts plotter.XYs, width vg.Length) error {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Width = width
		p.Add(l)
		return nil
	}
	for i, st := range stats {
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
