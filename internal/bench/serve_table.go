// The serve benchmark's table and plot, read from a saved result: each
// mechanism's point at each rate, the LS's latency and SLO attainment
// (and, under a tide setting whose SLO is a time, its attainment of that)
// against the BE's throughput and its recovery after the LS's last
// request.

package bench

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
)

// servePoint is one mechanism's outcome at one rate, as the table and the
// plot read it from a result.
type servePoint struct {
	pair, mech  string
	rate        float64
	lat         stats.Stats
	p999        float64
	be          float64
	beUnit      string  // img/s, seq/s
	slo, attain float64 // the SLO and the share of requests that met it (NaN: no SLO)
	warm        float64 // the share of those that arrived Warm or more after the LS's start (NaN: none)
	busy        float64 // the p99 of the LS's busy periods, from its block (NaN: not an LS tenant)
	note        string  // the series' note: a setup that steers, which was not steered, says why
	// ownSLO and ownAttain: a tide setting's own SLO, a time, and the
	// share of requests within it (NaN: none)
	ownSLO, ownAttain float64
	// back: the BE's recovery after the LS's last request, in s (NaN: none
	// measured); seen: where it did not recover, how long it was seen;
	// tailMax: the most of its rate alone it reached after that request
	back, seen, tailMax float64
}

func servePoints(r *report.Result) []servePoint {
	slos, _ := r.Params["slo_ms"].(map[string]any)
	var out []servePoint
	for _, s := range r.Series {
		p := servePoint{pair: s.Victim + " beside " + s.Competitor, mech: s.Mechanism, slo: math.NaN(), attain: math.NaN(), warm: math.NaN(), busy: math.NaN(), note: s.Note,
			ownSLO: math.NaN(), ownAttain: math.NaN(), back: math.NaN(), seen: math.NaN(), tailMax: math.NaN()}
		for _, pt := range s.Points {
			switch {
			case strings.HasPrefix(pt.Label, "LS latency @"):
				p.lat = pt.Stats
				p.rate, _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(pt.Label, "LS latency @"), "/s"), 64)
			case pt.Label == "LS p99.9":
				p.p999 = pt.Stats.P50
			case pt.Label == "BE throughput":
				p.be, p.beUnit = pt.Stats.P50, pt.Unit
			case pt.Label == "SLO attainment":
				p.attain = pt.Stats.P50
			case pt.Label == "SLO attainment, warm":
				p.warm = pt.Stats.P50
			case pt.Label == "LS busy periods":
				p.busy = pt.Stats.P99
			case pt.Label == "its own SLO":
				p.ownSLO = pt.Stats.P50
			case pt.Label == "SLO attainment, its own SLO":
				p.ownAttain = pt.Stats.P50
			case pt.Label == "BE recovery":
				p.back = pt.Stats.P50
			case pt.Label == "BE recovery, not within":
				p.seen = pt.Stats.P50
			case pt.Label == "BE rate after the LS's last request":
				p.tailMax = pt.Stats.Max
			}
		}
		if v, ok := slos[fmt.Sprintf("%s @%g/s", s.Victim, p.rate)].(float64); ok {
			p.slo = v
		}
		out = append(out, p)
	}
	return out
}

func serveTable(tw io.Writer, r *report.Result) {
	points := servePoints(r)
	alone := map[string]float64{} // BE alone, per pair
	lsAlone := map[string]float64{}
	for _, p := range points {
		if p.mech == "BE alone, whole GPU" {
			alone[p.pair] = p.be
		}
		if p.mech == "LS alone, whole GPU" {
			lsAlone[fmt.Sprintf("%s@%g", p.pair, p.rate)] = p.lat.P99
		}
	}
	own, back, warm := false, false, false // whether some row has its own SLO, a BE recovery, a warm attainment
	for _, p := range points {
		own = own || !math.IsNaN(p.ownAttain)
		warm = warm || !math.IsNaN(p.warm)
		back = back || !math.IsNaN(p.back) || !math.IsNaN(p.seen)
	}
	head := "PAIR\tRATE\tMECHANISM\tLS P50\tLS P99\tLS P99.9\tP99 VS ALONE\tSLO MS\tSLO MET"
	if warm {
		head += "\tWARM MET"
	}
	head += "\tBUSY P99\tBE /S\tBE VS ALONE"
	if own {
		head += "\tOWN SLO MET"
	}
	if back {
		head += "\tBE RECOVERY"
	}
	fmt.Fprintln(tw, head)
	for _, p := range points {
		ratio, slo, be, met, busy := "-", "-", "-", "-", "-"
		if !math.IsNaN(p.busy) {
			busy = fmt.Sprintf("%.2f", p.busy)
		}
		if !math.IsNaN(p.attain) {
			met = fmt.Sprintf("%.2f%%", 100*p.attain)
		}
		if a := lsAlone[fmt.Sprintf("%s@%g", p.pair, p.rate)]; a > 0 && p.lat.N > 0 {
			ratio = fmt.Sprintf("%.2fx", p.lat.P99/a)
		}
		if !math.IsNaN(p.slo) {
			slo = fmt.Sprintf("%.2f", p.slo)
		}
		if a := alone[p.pair]; a > 0 && p.be > 0 {
			be = fmt.Sprintf("%.0f%%", 100*p.be/a)
		}
		rate, lat := "-", "-\t-\t-"
		if p.lat.N > 0 {
			rate = fmt.Sprintf("%g/s", p.rate)
			lat = fmt.Sprintf("%.2f\t%.2f\t%.2f", p.lat.P50, p.lat.P99, p.p999)
		}
		mech := p.mech
		if p.note != "" {
			mech += " (!)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", p.pair, rate, mech, lat, ratio, slo, met)
		if warm {
			w := "-"
			if !math.IsNaN(p.warm) {
				w = fmt.Sprintf("%.2f%%", 100*p.warm)
			}
			fmt.Fprintf(tw, "\t%s", w)
		}
		fmt.Fprintf(tw, "\t%s\t%.0f\t%s", busy, p.be, be)
		if own {
			fmt.Fprintf(tw, "\t%s", ownCell(p))
		}
		if back {
			fmt.Fprintf(tw, "\t%s", recoveryCell(p))
		}
		fmt.Fprintln(tw)
	}
	for _, p := range points {
		if p.note != "" {
			fmt.Fprintf(tw, "(!) %s, %s at %g/s: %s\n", p.pair, p.mech, p.rate, p.note)
		}
	}
	fmt.Fprintln(tw, "latency in ms from the request's arrival, queueing included; SLO: 2 x the LS's p99 alone on the whole GPU at the same rate")
	if warm {
		fmt.Fprintf(tw, "WARM MET: of the requests that arrived %v or more after the LS's start, the share within the SLO\n", Warm)
	}
	fmt.Fprintln(tw, "BUSY P99: the p99 of the LS's busy periods over its serving (ms; from its control block, under carve tide), an input of the estimate --slo bounds")
	fmt.Fprintln(tw, "BE /S: "+beUnits(points))
	if own {
		fmt.Fprintln(tw, "OWN SLO MET: under a tide setting whose SLO is a time (slo=9ms), the share of requests within it, its ms in brackets")
	}
	if back {
		fmt.Fprintf(tw, "BE RECOVERY: from the LS's last request's completion until the BE's rate, over its last steps of %v or more, first reached %g%% of its rate alone, in s; >T: not within the T s seen after it (the most of its rate alone it reached then)\n",
			RecoveryWindow, 100*RecoveryShare)
	}
	if models, ok := r.Params["models"].(map[string]any); ok && len(models) > 0 {
		fmt.Fprintln(tw, "models: "+describeModels(models))
	}
	for _, o := range []struct{ suffix, note string }{
		{beFirstSuffix, "(BE first): the BE started and ran before the LS started, warmed up and captured its graph; its throughput is over the LS's serving only; otherwise the LS was ready first"},
		{beReadySuffix, "(BE ready first): the BE started and warmed up, then waited while the LS started, warmed up and captured its graph; both went together"},
	} {
		if slices.ContainsFunc(points, func(p servePoint) bool { return strings.HasSuffix(p.mech, o.suffix) }) {
			fmt.Fprintln(tw, o.note)
		}
	}
	if over, ok := r.Params["over_half_capacity"].([]any); ok {
		for _, o := range over {
			fmt.Fprintf(tw, "rate %v: the LS is overloaded by its own requests; such points say little of sharing\n", o)
		}
	}
	if failed, ok := r.Params["failed"].([]any); ok {
		for _, f := range failed {
			fmt.Fprintf(tw, "not measured: %v\n", f)
		}
	}
}

// ownCell is p's attainment of its own SLO, e.g. "99.10% (9.00)"; "-"
// for none.
func ownCell(p servePoint) string {
	if math.IsNaN(p.ownAttain) {
		return "-"
	}
	return fmt.Sprintf("%.2f%% (%.2f)", 100*p.ownAttain, p.ownSLO)
}

// recoveryCell is p's BE recovery: "0.24s", ">1.52s (86%)" where it was
// not seen within that (reaching at most 86% of its rate alone), "-"
// where none was measured.
func recoveryCell(p servePoint) string {
	switch {
	case !math.IsNaN(p.back):
		return fmt.Sprintf("%.2fs", p.back)
	case !math.IsNaN(p.seen) && !math.IsNaN(p.tailMax):
		return fmt.Sprintf(">%.2fs (%.0f%%)", p.seen, 100*p.tailMax)
	case !math.IsNaN(p.seen):
		return fmt.Sprintf(">%.2fs", p.seen)
	}
	return "-"
}

// plotServe draws, per pair and rate, the LS's p99 (log scale) against the
// BE's throughput, one marker per mechanism and setting: down and to the
// right is better.
func plotServe(r *report.Result, dir string) error {
	points := servePoints(r)
	var panels []*plot.Plot
	var keys []string
	byKey := map[string][]servePoint{}
	for _, p := range points {
		if p.lat.N == 0 {
			continue
		}
		k := fmt.Sprintf("%s, %g requests/s", p.pair, p.rate)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	for _, k := range keys {
		pl := plot.New()
		pl.Title.Text = k
		pl.X.Label.Text = "BE throughput (" + cmp.Or(beUnitOf(byKey[k]), "img/s") + ")"
		pl.Y.Label.Text = "LS p99 latency (ms, log)"
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = logTicks{}
		top, right := 0.0, maxBE(byKey[k])
		for _, p := range byKey[k] {
			top = max(top, p.lat.P99, p.slo)
		}
		pl.Y.Max, pl.X.Max, pl.X.Min = 3*top, 1.1*right, 0 // room above for the legend
		for i, p := range byKey[k] {
			sc, err := plotter.NewScatter(plotter.XYs{{X: p.be, Y: p.lat.P99}})
			if err != nil {
				return err
			}
			sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
			sc.Radius = vg.Points(4)
			pl.Add(sc)
			pl.Legend.Add(p.mech, sc)
			if !math.IsNaN(p.slo) && i == 0 {
				l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.slo}, {X: 1.1 * right, Y: p.slo}})
				if err != nil {
					return err
				}
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				l.Color = color.RGBA{R: 200, A: 255}
				pl.Add(l)
				pl.Legend.Add(fmt.Sprintf("SLO %.2f ms", p.slo), l)
			}
		}
		for i, c := range splitCurves(byKey[k]) {
			if len(c) < 2 {
				continue
			}
			l, err := plotter.NewLine(c)
			if err != nil {
				return err
			}
			l.Color = color.Gray{Y: 150}
			name := "MPS's splits"
			if i == 1 {
				l.Dashes, name = []vg.Length{vg.Points(2), vg.Points(2)}, name+" (BE first)"
			}
			pl.Add(l)
			pl.Legend.Add(name, l)
		}
		pl.Legend.Top, pl.Legend.Left = true, true
		panels = append(panels, pl)
	}
	if len(panels) == 0 {
		return errors.New("serve result has no LS latencies to plot")
	}
	return report.SavePanels(panels, min(2, len(panels)), 8*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark))
}

// splitCurves are the points of MPS's percentage splits among ps (p99
// against BE throughput), by BE throughput: [0] those started in the
// default order, [1] those where the BE started first: the curve a
// mechanism's point is judged against. Those of the BE ready first are on
// neither.
func splitCurves(ps []servePoint) [2]plotter.XYs {
	var out [2]plotter.XYs
	for _, p := range ps {
		if !strings.HasPrefix(p.mech, "MPS ") || !strings.Contains(p.mech, "%/") {
			continue
		}
		i := 0
		if strings.HasSuffix(p.mech, beReadySuffix) {
			continue
		} else if strings.HasSuffix(p.mech, beFirstSuffix) {
			i = 1
		}
		out[i] = append(out[i], plotter.XY{X: p.be, Y: p.lat.P99})
	}
	for _, c := range out {
		slices.SortFunc(c, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	}
	return out
}

// logTicks labels 1, 2 and 5 of each decade of a log axis.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * d; v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return out
}

// beUnits says each BE's throughput unit, e.g. "densenet161 in img/s,
// transformer-train in seq/s".
func beUnits(points []servePoint) string {
	var out []string
	seen := map[string]bool{}
	for _, p := range points {
		if _, be, _ := strings.Cut(p.pair, " beside "); p.beUnit != "" && !seen[be] {
			seen[be] = true
			out = append(out, be+" in "+p.beUnit)
		}
	}
	return strings.Join(out, ", ")
}

// describeModels says each model's parameters (and, for the language
// models, tokens), sorted by name.
func describeModels(models map[string]any) string {
	var out []string
	for name, v := range models {
		info, _ := v.(map[string]any)
		s := name
		if n, ok := info["params"].(float64); ok {
			s += fmt.Sprintf(" %.0fM parameters", n/1e6)
		}
		for _, k := range []string{"prompt_tokens", "new_tokens", "seq", "batch"} {
			if n, ok := info[k].(float64); ok {
				s += fmt.Sprintf(", %s %g", strings.ReplaceAll(k, "_", " "), n)
			}
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func beUnitOf(ps []servePoint) string {
	for _, p := range ps {
		if p.beUnit != "" {
			return p.beUnit
		}
	}
	return ""
}

func maxBE(ps []servePoint) float64 {
	m := 1.0
	for _, p := range ps {
		m = max(m, p.be)
	}
	return m
}
