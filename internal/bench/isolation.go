package bench

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// SuiteSamples prepares every app of the suite in s, then times each reps
// times after one warm-up run. It returns the times (ms) by app.
func SuiteSamples(s *Session, reps int) (map[string][]float64, error) {
	apps := make([]*App, len(SuiteApps))
	for i, name := range SuiteApps {
		a, err := NewApp(s, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		apps[i] = a
	}
	out := make(map[string][]float64, len(apps))
	for _, a := range apps {
		ms := make([]float64, 0, reps)
		for i := 0; i <= reps; i++ {
			v, err := a.Iterate()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.name, err)
			}
			if i > 0 {
				ms = append(ms, v)
			}
		}
		out[a.name] = ms
	}
	return out, nil
}

// SuiteSeries turns SuiteSamples' output into a series, one point per app
// in suite order.
func SuiteSeries(mechanism, competitor string, byApp map[string][]float64) Series {
	s := Series{Mechanism: mechanism, Competitor: competitor, Measured: true}
	if strings.HasPrefix(mechanism, "green") {
		s.Note = GreenNote
	}
	for _, app := range SuiteApps {
		if ms, ok := byApp[app]; ok {
			s.Points = append(s.Points, Point{Label: app, Stats: Summarize(ms)})
		}
	}
	return s
}

// Variation is FGPU's isolation metric for one app under one mechanism:
// the largest of its mean times beside each interferer over its mean time
// with the other partition idle, minus one.
func Variation(alone float64, with []float64) float64 {
	return slices.Max(with)/alone - 1
}

// VariationRow is one mechanism's variation per app, with their average
// and maximum (FGPU's Table III).
type VariationRow struct {
	Mechanism string             `json:"mechanism"`
	PerApp    map[string]float64 `json:"per_app"`
	Avg       float64            `json:"avg"`
	Max       float64            `json:"max"`
	// ByInterferer is the average over apps of T_with / T_alone - 1 for
	// each interferer alone: which kind of neighbour does the damage.
	ByInterferer map[string]float64 `json:"by_interferer"`
}

// Variations computes every mechanism's row from an isolation result: for
// each mechanism, the series without a competitor is the alone time, and
// every series with one is an interferer. Mechanisms without both are
// skipped; rows keep the order in which mechanisms first appear.
func Variations(r *Result) []VariationRow {
	var order []string
	alone := map[string]map[string]float64{}
	with := map[string]map[string][]float64{}
	type key struct{ mech, comp, app string }
	each := map[key]float64{}
	for _, s := range r.Series {
		order = addNew(order, s.Mechanism)
		for _, p := range s.Points {
			if s.Competitor == "" {
				if alone[s.Mechanism] == nil {
					alone[s.Mechanism] = map[string]float64{}
				}
				alone[s.Mechanism][p.Label] = p.Stats.Mean
				continue
			}
			if with[s.Mechanism] == nil {
				with[s.Mechanism] = map[string][]float64{}
			}
			with[s.Mechanism][p.Label] = append(with[s.Mechanism][p.Label], p.Stats.Mean)
			each[key{s.Mechanism, s.Competitor, p.Label}] = p.Stats.Mean
		}
	}
	var rows []VariationRow
	for _, m := range order {
		row := VariationRow{Mechanism: m, PerApp: map[string]float64{}, ByInterferer: map[string]float64{}}
		count := map[string]int{}
		for k, v := range each {
			if t := alone[m][k.app]; k.mech == m && t > 0 {
				row.ByInterferer[k.comp] += v/t - 1
				count[k.comp]++
			}
		}
		for c, n := range count {
			row.ByInterferer[c] /= float64(n)
		}
		for app, t := range alone[m] {
			if w := with[m][app]; len(w) > 0 {
				v := Variation(t, w)
				row.PerApp[app] = v
				row.Avg += v
				row.Max = max(row.Max, v)
			}
		}
		if len(row.PerApp) == 0 {
			continue
		}
		row.Avg /= float64(len(row.PerApp))
		rows = append(rows, row)
	}
	return rows
}

// PlotIsolation draws FGPU's Fig. 9 for each mechanism: per app, its mean
// time alone and beside each interferer, normalized by twice the app's time
// alone on the whole GPU (the series named by Params["baseline"]), one
// panel per mechanism, to DIR/isolation.{png,svg}.
func PlotIsolation(r *Result, dir string) error {
	base, _ := r.Params["baseline"].(string)
	norm := map[string]float64{}
	var mechs []string
	for _, s := range r.Series {
		if s.Mechanism == base && s.Competitor == "" {
			for _, p := range s.Points {
				norm[p.Label] = 2 * p.Stats.Mean
			}
		}
		mechs = addNew(mechs, s.Mechanism)
	}
	if len(norm) == 0 {
		return fmt.Errorf("isolation result has no baseline series %q", base)
	}
	comps := append([]string{""}, Interferers...)
	var panels []*plot.Plot
	for _, m := range mechs {
		p := plot.New()
		p.Title.Text = m
		p.Y.Label.Text = "mean time / (2 x whole-GPU time)"
		p.Y.Min = 0
		w := vg.Points(14)
		top := 0.0
		for ci, c := range comps {
			for _, s := range r.Series {
				if s.Mechanism != m || s.Competitor != c {
					continue
				}
				vals := make(plotter.Values, len(SuiteApps))
				for _, pt := range s.Points {
					if i := slices.Index(SuiteApps, pt.Label); i >= 0 && norm[pt.Label] > 0 {
						vals[i] = pt.Stats.Mean / norm[pt.Label]
						top = max(top, vals[i])
					}
				}
				b, err := plotter.NewBarChart(vals, w)
				if err != nil {
					return err
				}
				b.Color = plotutil.Color(ci)
				b.LineStyle.Width = 0
				b.Offset = w * vg.Length(float64(ci)-float64(len(comps)-1)/2)
				p.Add(b)
				name := "alone (other half idle)"
				if c != "" {
					name = "beside " + c
				}
				p.Legend.Add(name, b)
			}
		}
		one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(SuiteApps)) - 0.5, Y: 1}})
		if err != nil {
			return err
		}
		one.Color = color.Gray{Y: 120}
		one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(one)
		p.NominalX(SuiteApps...)
		p.Y.Max = 1.4 * max(top, 1) // room for the legend above the bars
		p.Legend.Top = true
		panels = append(panels, p)
	}
	return SavePanels(panels, 1, 10*vg.Inch, 3*vg.Inch, filepath.Join(dir, r.Benchmark))
}
