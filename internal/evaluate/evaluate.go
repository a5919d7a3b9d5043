// Package evaluate holds the latency model's evaluation on real co-runs:
// the groups run, what was measured, what each model predicted, the error
// summaries and plots (the paper's Fig. 14 and 15), and fitting carve's
// model to them. It runs nothing on a GPU: internal/bench makes the co-runs.
package evaluate

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/carve-gpu/carve/internal/jsonfile"
	"github.com/carve-gpu/carve/internal/model"
	"github.com/carve-gpu/carve/internal/report"
)

// Run is one kernel of one group as it ran.
type Run struct {
	model.Member
	SMs        int                `json:"sms"`
	Set        string             `json:"tpc_set"`
	MeasuredMS []float64          `json:"measured_ms"` // one per round
	Measured   float64            `json:"measured_median_ms"`
	AloneMS    float64            `json:"alone_ms"`     // the profile's median on the same partition size
	Predicted  map[string]float64 `json:"predicted_ms"` // by model
}

// Evaluation is a whole experiment, as saved to evaluation.json.
type Evaluation struct {
	Device   string    `json:"device"`
	UUID     string    `json:"uuid"`
	Driver   string    `json:"driver"`
	Date     string    `json:"date"`
	Seed     uint64    `json:"seed"`
	Rounds   int       `json:"rounds"`
	Sizes    []int     `json:"sizes_tpcs"`
	Profiles string    `json:"profiles"`
	GPU      model.GPU `json:"gpu_constants"`
	Groups   [][]Run   `json:"groups"`
	// FittedOn names the evaluation carve's SharedBW was fitted to ("" if
	// it was not fitted).
	FittedOn string `json:"shared_bw_fitted_on,omitempty"`
	// Calibration is the file carve's SharedBW came from ("" where none
	// was found: the most bandwidth one kernel reached stood in).
	Calibration string               `json:"calibration,omitempty"`
	Summary     []model.ErrorSummary `json:"summary"`
}

// Models are the predictions compared, in report order: the paper's
// model as written; the same on latencies measured alone; carve's model;
// and a baseline that ignores interference.
var Models = []string{"paper", "paper-measured", "carve", "alone"}

// Predict fills every run's predictions from g and the kernels.
func Predict(g model.GPU, ks map[string]*model.Kernel, runs []Run) error {
	ps := make([]model.Placement, len(runs))
	for i, r := range runs {
		k, ok := ks[r.Kernel]
		if !ok {
			return fmt.Errorf("no profile of %s", r.Kernel)
		}
		ps[i] = model.Placement{Kernel: k, SMs: r.SMs}
	}
	paper, _, err := g.Predict(ps)
	if err != nil {
		return err
	}
	measured, _, err := g.PredictMeasured(ps)
	if err != nil {
		return err
	}
	carve, err := model.PredictShared(ps, model.Pull(ks), g.Shared())
	if err != nil {
		return err
	}
	for i := range runs {
		alone, err := ps[i].Kernel.C(runs[i].SMs)
		if err != nil {
			return err
		}
		runs[i].AloneMS = alone
		runs[i].Predicted = map[string]float64{"paper": paper[i].CoRun, "paper-measured": measured[i].CoRun, "carve": carve[i], "alone": alone}
	}
	return nil
}

// Observed turns the evaluation's groups into co-runs to fit carve's
// model to.
func (e *Evaluation) Observed(ks map[string]*model.Kernel) ([]model.Observed, error) {
	var out []model.Observed
	for _, g := range e.Groups {
		var o model.Observed
		for _, r := range g {
			k, ok := ks[r.Kernel]
			if !ok {
				return nil, fmt.Errorf("no profile of %s", r.Kernel)
			}
			o.Placements = append(o.Placements, model.Placement{Kernel: k, SMs: r.SMs})
			o.Measured = append(o.Measured, r.Measured)
		}
		out = append(out, o)
	}
	return out, nil
}

// Repredict recomputes every prediction with g (its SharedBW fitted
// elsewhere) and the summaries: the measurements stay as they were.
func (e *Evaluation) Repredict(g model.GPU, ks map[string]*model.Kernel) error {
	e.GPU = g
	for _, runs := range e.Groups {
		if err := Predict(g, ks, runs); err != nil {
			return err
		}
	}
	e.Summarize()
	return nil
}

// Summarize computes each model's error summary over all runs.
func (e *Evaluation) Summarize() {
	e.Summary = nil
	for _, m := range Models {
		var errs []float64
		var sizes []int
		for _, g := range e.Groups {
			for _, r := range g {
				if p, ok := r.Predicted[m]; ok && r.Measured > 0 {
					errs = append(errs, (p-r.Measured)/r.Measured)
					sizes = append(sizes, len(g))
				}
			}
		}
		e.Summary = append(e.Summary, model.Summarize(m, errs, sizes))
	}
}

// Save writes DIR/evaluation.json and the plots.
func (e *Evaluation) Save(dir string) (string, error) {
	path, err := jsonfile.Save(dir, "evaluation.json", e)
	if err != nil {
		return "", err
	}
	return path, e.Plot(dir)
}

// Load reads an evaluation saved by Save.
func Load(path string) (*Evaluation, error) {
	var e Evaluation
	if err := jsonfile.Load(path, EvaluationKind, &e); err != nil {
		return nil, err
	}
	if len(e.Groups) == 0 {
		return nil, EvaluationKind.Not(path, "no co-run groups")
	}
	return &e, nil
}

// EvaluationKind is the kind of file Save writes.
var EvaluationKind = jsonfile.Kind{What: "a carve evaluation",
	Want: "the evaluation.json that 'carve bench predict --out DIR' or 'carve bench fit' writes"}

// Plot draws predicted against measured latency per model (points on the
// diagonal are exact; the paper's Fig. 14 shows the same errors as a
// distribution) and the mean absolute error by group size (its Fig. 15),
// to DIR/prediction.{png,svg} and DIR/error-by-size.{png,svg}.
func (e *Evaluation) Plot(dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("co-run latency, predicted vs measured, %s", e.Device)
	p.X.Label.Text = "measured (ms, log)"
	p.Y.Label.Text = "predicted (ms, log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	lo, hi := 1e9, 0.0
	for i, m := range Models {
		var pts plotter.XYs
		for _, g := range e.Groups {
			for _, r := range g {
				if v, ok := r.Predicted[m]; ok && v > 0 && r.Measured > 0 {
					pts = append(pts, plotter.XY{X: r.Measured, Y: v})
					lo, hi = min(lo, r.Measured, v), max(hi, r.Measured, v)
				}
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
		p.Add(sc)
		p.Legend.Add(m, sc)
	}
	if hi > 0 {
		diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
		if err != nil {
			return err
		}
		diag.Color = color.Gray{Y: 120}
		p.Add(diag)
	}
	p.Legend.Top, p.Legend.Left = true, true
	if err := report.Save(p, 7*vg.Inch, 6*vg.Inch, filepath.Join(dir, "prediction")); err != nil {
		return err
	}

	b := plot.New()
	b.Title.Text = "mean absolute error by group size"
	b.Y.Label.Text = "mean |predicted - measured| / measured"
	var sizes []int
	for _, s := range e.Summary {
		for k := range s.BySize {
			if !slices.Contains(sizes, k) {
				sizes = append(sizes, k)
			}
		}
	}
	sort.Ints(sizes)
	w := vg.Points(12)
	for i, s := range e.Summary {
		vals := make(plotter.Values, len(sizes))
		for j, k := range sizes {
			vals[j] = s.BySize[k]
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(e.Summary)-1)/2)
		b.Add(bars)
		b.Legend.Add(fmt.Sprintf("%s (all: %.1f%%)", s.Model, 100*s.MAE), bars)
	}
	names := make([]string, len(sizes))
	for i, k := range sizes {
		names[i] = fmt.Sprintf("%d kernels", k)
	}
	b.NominalX(names...)
	b.Legend.Top = true
	return report.Save(b, 7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "error-by-size"))
}

// WriteTable prints each model's error summary, and which shared
// bandwidth carve's row used.
func (e *Evaluation) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	n := 0
	if len(e.Summary) > 0 {
		n = e.Summary[0].N
	}
	fmt.Fprintf(tw, "%d groups, %d kernel runs, seed %d, on %s\n", len(e.Groups), n, e.Seed, e.Device)
	fmt.Fprintln(tw, "MODEL\tMEAN ABS ERROR\tMEAN ERROR\tOVER\tUNDER\tWITHIN 20%\tMAX OVER\tMAX UNDER\tMAE BY GROUP SIZE 2..6")
	for _, s := range e.Summary {
		var by []string
		for k := 2; k <= 6; k++ {
			if v, ok := s.BySize[k]; ok {
				by = append(by, fmt.Sprintf("%.1f%%", 100*v))
			}
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%+.1f%%\t%d\t%d\t%d\t%+.0f%%\t%+.0f%%\t%s\n", s.Model, 100*s.MAE, 100*s.Mean, s.Over, s.Under,
			s.Within20, 100*s.MaxOver, 100*s.MaxUnd, strings.Join(by, " "))
	}
	fmt.Fprintf(tw, "carve's model shares %.0f GB/s of DRAM bandwidth: %s\n", e.GPU.Shared(), e.CalibrationNote())
	fmt.Fprintln(tw, "paper (GPGPU-Sim, RTX 2060): 10.7% mean error, 285 over / 135 under of 420")
	return tw.Flush()
}

// CalibrationNote says where carve's shared bandwidth came from.
func (e *Evaluation) CalibrationNote() string {
	switch {
	case e.Calibration != "" && e.FittedOn != "":
		return fmt.Sprintf("calibration %s, fitted on %s", e.Calibration, e.FittedOn)
	case e.Calibration != "":
		return "calibration " + e.Calibration
	case e.GPU.SharedBW > 0:
		return "fitted on " + e.FittedOn
	}
	return "no calibration: the most one kernel reached alone (fit one with carve bench fit)"
}
