// carve bench isolation: FGPU's experiment, the isolation suite in one
// partition alone and beside each interferer in the other, and FGPU's
// variation metric (its Table III) computed from the result, with its plot
// and table.

package bench

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/workload"
)

// IsolationOptions are carve bench isolation's flags.
type IsolationOptions struct {
	Reps     int
	Share    float64 // the apps' share of the GPU
	Progress Progress
}

// Check rejects options that cannot run, before the GPU is asked.
func (o IsolationOptions) Check() error {
	if o.Reps < 1 {
		return errors.New("--reps: want at least 1")
	}
	return checkShare("share", o.Share)
}

// Isolation runs FGPU's experiment: the isolation suite in one partition,
// alone and while each interferer runs without pause in the other, under
// no partitioning, MPS percentages, carve, carve with bandwidth shares of
// the same split (strict, and work-conserving) and green contexts; the result
// carries FGPU's variation per app and mechanism in Params["variation"].
func Isolation(e *Env, o IsolationOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	reps, share, device := o.Reps, o.Share, e.Device
	vset, iset := e.Split(share)
	pct := func(f float64) []string {
		return []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%.0f", 100*f)}
	}
	setups := []Setup{
		{Mechanism: "none"},
		{Mechanism: fmt.Sprintf("MPS %.0f%%/%.0f%%", 100*share, 100*(1-share)), VictimEnv: pct(share), CompEnv: pct(1 - share)},
		{Mechanism: fmt.Sprintf("carve %d/%d TPCs", len(vset), len(iset)), VictimPrefix: e.CarveRun(vset), CompetitorPrefix: e.CarveRun(iset)},
	}
	// the same halves with bandwidth shares of the same split (shim/bw.c):
	// strict, each in its slot of each epoch whether the other runs or not
	// (the victim's time with the other half idle, the first of each
	// setup's runs, is then its strict slot's); and work-conserving
	bw := func(f float64, set partition.Set, strict bool) []string {
		flags := []string{"-t", set.String(), "--bw", strconv.FormatFloat(f, 'g', -1, 64)}
		if strict {
			flags = append(flags, "--bw-strict")
		}
		return e.Run(flags...)
	}
	for _, strict := range []bool{true, false} {
		name := fmt.Sprintf("carve bw %g", share)
		if strict {
			name = fmt.Sprintf("carve bw strict %.0f/%.0f", 100*share, 100*(1-share))
		}
		setups = append(setups, Setup{Mechanism: name, VictimPrefix: bw(share, vset, strict), CompetitorPrefix: bw(1-share, iset, strict)})
	}
	comps := append([]string{""}, workload.Interferers...)
	w := Workers{Exe: e.Exe, Env: e.MPSEnv()}
	argv := []string{e.Exe, "bench", "__suite", fmt.Sprintf("--reps=%d", reps), fmt.Sprintf("--device=%d", device)}
	r := newResult("isolation", e.Topo, map[string]any{"reps": reps, "share": share, "victim_tpcs": vset.String(), "interferer_tpcs": iset.String(),
		"apps": workload.SuiteApps, "interferers": workload.Interferers, "baseline": "none"})
	step, total := 0, (len(setups)+1)*len(comps)
	done := func() { step++; o.Progress.report(step, total) }
	for _, s := range setups {
		for _, comp := range comps {
			var byApp map[string][]float64
			err := func() error {
				if comp != "" {
					stop, err := w.StartCompetitor(s, comp)
					if err != nil {
						return err
					}
					defer stop()
				}
				return w.Victim(s, &byApp, argv...)
			}()
			if err != nil {
				return nil, fmt.Errorf("%s, interferer %q: %w", s.Mechanism, comp, err)
			}
			r.Series = append(r.Series, SuiteSeries(s.Mechanism, comp, byApp))
			done()
		}
	}
	// Green contexts last, in this process (see enforcement).
	groups, rest, err := workload.GreenGroups(device)
	if err != nil {
		return nil, fmt.Errorf("green contexts: %w", err)
	}
	ga, gb := workload.GreenShares(groups, rest, share)
	mech := fmt.Sprintf("green %d/%d SMs", workload.SMsOf(ga), workload.SMsOf(gb))
	for _, comp := range comps {
		var byApp map[string][]float64
		err := workload.GreenPair(device, ga, gb, comp, func(s *workload.Session) error {
			if err := workload.CheckSuite(s); err != nil {
				return err
			}
			var err error
			byApp, err = workload.SuiteSamples(s, reps)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s, interferer %q: %w", mech, comp, err)
		}
		r.Series = append(r.Series, SuiteSeries(mech, comp, byApp))
		done()
	}
	rows := Variations(r)
	r.Params["variation"] = rows
	return r, nil
}

// SuiteSeries turns SuiteSamples' output into a series, one point per app
// in suite order.
func SuiteSeries(mechanism, competitor string, byApp map[string][]float64) report.Series {
	s := report.Series{Mechanism: mechanism, Competitor: competitor, Measured: true}
	if strings.HasPrefix(mechanism, "green") {
		s.Note = GreenNote
	}
	for _, app := range workload.SuiteApps {
		if ms, ok := byApp[app]; ok {
			s.Points = append(s.Points, report.Point{Label: app, Stats: stats.Summarize(ms)})
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
func Variations(r *report.Result) []VariationRow {
	var order []string
	alone := map[string]map[string]float64{}
	with := map[string]map[string][]float64{}
	type key struct{ mech, comp, app string }
	each := map[key]float64{}
	for _, s := range r.Series {
		order = report.AddNew(order, s.Mechanism)
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

// plotIsolation draws FGPU's Fig. 9 for each mechanism: per app, its mean
// time alone and beside each interferer, normalized by twice the app's time
// alone on the whole GPU (the series named by Params["baseline"]), one
// panel per mechanism, to DIR/isolation.{png,svg}.
func plotIsolation(r *report.Result, dir string) error {
	base, _ := r.Params["baseline"].(string)
	norm := map[string]float64{}
	var mechs []string
	for _, s := range r.Series {
		if s.Mechanism == base && s.Competitor == "" {
			for _, p := range s.Points {
				norm[p.Label] = 2 * p.Stats.Mean
			}
		}
		mechs = report.AddNew(mechs, s.Mechanism)
	}
	if len(norm) == 0 {
		return fmt.Errorf("isolation result has no baseline series %q", base)
	}
	comps := append([]string{""}, workload.Interferers...)
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
				vals := make(plotter.Values, len(workload.SuiteApps))
				for _, pt := range s.Points {
					if i := slices.Index(workload.SuiteApps, pt.Label); i >= 0 && norm[pt.Label] > 0 {
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
		one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(workload.SuiteApps)) - 0.5, Y: 1}})
		if err != nil {
			return err
		}
		one.Color = color.Gray{Y: 120}
		one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(one)
		p.NominalX(workload.SuiteApps...)
		p.Y.Max = 1.4 * max(top, 1) // room for the legend above the bars
		p.Legend.Top = true
		panels = append(panels, p)
	}
	return report.SavePanels(panels, 1, 10*vg.Inch, 3*vg.Inch, filepath.Join(dir, r.Benchmark))
}

func isolationTable(tw io.Writer, r *report.Result) {
	fmt.Fprint(tw, "MEAN MS\tINTERFERER")
	for _, app := range workload.SuiteApps {
		fmt.Fprintf(tw, "\t%s", app)
	}
	fmt.Fprintln(tw)
	for _, s := range r.Series {
		fmt.Fprintf(tw, "%s\t%s", s.Mechanism, cmp.Or(s.Competitor, "-"))
		for _, p := range s.Points {
			fmt.Fprintf(tw, "\t%.3f", p.Stats.Mean)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "\nVARIATION\t")
	for _, app := range workload.SuiteApps {
		fmt.Fprintf(tw, "\t%s", app)
	}
	fmt.Fprint(tw, "\tAVG\tMAX")
	for _, c := range workload.Interferers {
		fmt.Fprintf(tw, "\tAVG BESIDE %s", c)
	}
	fmt.Fprintln(tw)
	for _, row := range Variations(r) {
		fmt.Fprintf(tw, "%s\t", row.Mechanism)
		for _, app := range workload.SuiteApps {
			fmt.Fprintf(tw, "\t%.1f%%", 100*row.PerApp[app])
		}
		fmt.Fprintf(tw, "\t%.1f%%\t%.1f%%", 100*row.Avg, 100*row.Max)
		for _, c := range workload.Interferers {
			fmt.Fprintf(tw, "\t%.1f%%", 100*row.ByInterferer[c])
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "variation (FGPU): max over interferers of mean time beside it / mean time with the other partition idle - 1")
}
