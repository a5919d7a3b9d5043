package bench

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Point is one partition size of one mechanism.
type Point struct {
	TPCs  int   `json:"tpcs"`
	SMs   int   `json:"sms"`
	Stats Stats `json:"ms"`
}

// Series is one mechanism's points. Documented series (MiG here) come from
// vendor documentation, not from a run, and are drawn as such.
type Series struct {
	Mechanism string  `json:"mechanism"`
	Measured  bool    `json:"measured"`
	Note      string  `json:"note,omitempty"`
	Points    []Point `json:"points"`
}

// Result is one benchmark run, as written to NAME.json.
type Result struct {
	Benchmark string         `json:"benchmark"`
	Device    string         `json:"device"`
	UUID      string         `json:"uuid"`
	Driver    string         `json:"driver"`
	Date      string         `json:"date"`
	Params    map[string]any `json:"params"`
	Series    []Series       `json:"series"`
}

// MIGSliceSMs are the H100's MIG instance sizes in SMs (1g..4g and 7g), as
// NVIDIA documents them; MIG cannot be enabled on the lent GPU.
var MIGSliceSMs = []int{16, 32, 48, 64, 112}

// Save writes r as DIR/NAME.json.
func (r *Result) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, r.Benchmark+".json")
	return p, os.WriteFile(p, b, 0o644)
}

// Load reads a result saved by Save.
func Load(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Plot draws r's plots into dir, by benchmark.
func Plot(r *Result, dir string) error {
	switch r.Benchmark {
	case "granularity":
		return PlotGranularity(r, dir)
	case "enforcement":
		return PlotEnforcement(r, dir)
	}
	return fmt.Errorf("no plot for benchmark %q", r.Benchmark)
}

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

// PlotEnforcement draws one box per setup from its stats: the box spans p25
// to p75 with a bar at the median, the whisker min to max, a tick at p99;
// the reference time is a dashed line. To DIR/enforcement.{png,svg}.
func PlotEnforcement(r *Result, dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GEMM victim beside competitors, %s (box p25-p75, bar p50, tick p99, whisker min-max)", r.Device)
	p.Y.Label.Text = "victim time per launch (ms)"
	var names []string
	line := func(pts plotter.XYs, width vg.Length) error {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Width = width
		p.Add(l)
		return nil
	}
	for i, s := range r.Series {
		st, x := s.Points[0].Stats, float64(i)
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
		names = append(names, s.Mechanism)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1, 0
	if ref, ok := r.Params["scaled_alone_ms"].(float64); ok {
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
	for _, ext := range []string{"png", "svg"} {
		if err := p.Save(11*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark+"."+ext)); err != nil {
			return err
		}
	}
	return nil
}
