// carve bench granularity: an n x n GEMM timed at every partition size each
// mechanism can express (carve's TPC counts, green contexts' SM groups,
// MPS percentages, MIG's documented sizes), with its plot and table.

package bench

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/workload"
)

// GranularityOptions are carve bench granularity's flags.
type GranularityOptions struct {
	N, Reps, Device int
	Mechanisms      []string // carve, mps, green
	Progress        func(what string) Progress
}

// Check rejects options that cannot run, before the GPU is asked.
func (o GranularityOptions) Check() error {
	if len(o.Mechanisms) == 0 {
		return errors.New("--mechanisms is empty")
	}
	for _, m := range o.Mechanisms {
		if m != "carve" && m != "mps" && m != "green" {
			return fmt.Errorf("unknown mechanism %q: want carve, mps or green", m)
		}
	}
	if o.Reps < 1 {
		return fmt.Errorf("--reps %d: want at least 1", o.Reps)
	}
	return nil
}

// Granularity times an n x n GEMM (checked against the CPU first) at every
// partition size each mechanism can express: carve on every TPC count,
// GPC-packed; MPS at every active-thread percentage (one client process
// each, under an MPS daemon of its own); green contexts at every multiple of
// the driver's SM group; with MiG's documented sizes beside them.
func Granularity(o GranularityOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) Progress { return nil }
	}
	t, _, err := discover.Topology(o.Device, false)
	if err != nil {
		return nil, err
	}
	sess, err := workload.Open(o.Device)
	if err != nil {
		return nil, err
	}
	g, err := workload.NewGEMM(sess, o.N)
	if err != nil {
		return nil, err
	}
	if e, err := g.Check(128, nil); err != nil || e > 1e-5 {
		return nil, fmt.Errorf("GEMM check against the CPU: relative error %g, %v", e, err)
	}
	r := newResult("granularity", t, map[string]any{"n": o.N, "reps": o.Reps, "placement": "GPC-packed (carve run -n K)"})
	// Green contexts first: the driver refuses them in a process where a
	// launch callback is subscribed, as carve's series subscribes one.
	mechanisms := o.Mechanisms
	if i := slices.Index(mechanisms, "green"); i > 0 {
		mechanisms = append([]string{"green"}, slices.Delete(slices.Clone(mechanisms), i, i+1)...)
	}
	for _, m := range mechanisms {
		var s report.Series
		switch m {
		case "carve":
			s, err = GranularityCarve(g, t, o.Reps, progress("granularity: carve"))
		case "mps":
			s, err = granularityMPS(o, t, progress("granularity: MPS"))
		case "green":
			s, err = GranularityGreen(o.Device, o.N, o.Reps, progress("granularity: green contexts"))
		}
		if err != nil {
			return nil, err
		}
		r.Series = append(r.Series, s)
	}
	r.Series = append(r.Series, MIGSeries())
	return r, nil
}

// granularityMPS measures the MPS series in GEMM worker processes under an
// MPS daemon of its own, stopped before returning.
func granularityMPS(o GranularityOptions, t *topo.Topology, progress Progress) (report.Series, error) {
	root, err := os.MkdirTemp("", "carve-bench-mps-")
	if err != nil {
		return report.Series{}, err
	}
	defer os.RemoveAll(root)
	d := mps.Daemon{Root: root}
	if err := d.Start(); err != nil {
		return report.Series{}, err
	}
	defer d.Stop()
	exe, err := os.Executable()
	if err != nil {
		return report.Series{}, err
	}
	w := ExecWorker(exe, "bench", "__gemm", fmt.Sprintf("--n=%d", o.N), fmt.Sprintf("--reps=%d", o.Reps), fmt.Sprintf("--device=%d", o.Device))
	return GranularityMPS(w, d, len(t.TPCs), t.SMCount, progress)
}

// MIGSliceSMs are the H100's MIG instance sizes in SMs (1g..4g and 7g), as
// NVIDIA documents them; MIG cannot be enabled on the lent GPU.
var MIGSliceSMs = []int{16, 32, 48, 64, 112}

// GranularityCarve times the GEMM on every TPC count 1..N, each partition
// placed GPC-packed as `carve run -n K` would, reps times after one warm-up.
func GranularityCarve(g *workload.GEMM, t *topo.Topology, reps int, progress Progress) (report.Series, error) {
	s := report.Series{Mechanism: "carve", Measured: true, Note: "TPC masks, in-process (the same masks the shim writes)"}
	for k := 1; k <= len(t.TPCs); k++ {
		set := partition.Pack(t, k, nil)
		mask, err := partition.Mask(t, set)
		if err != nil {
			return s, err
		}
		ms, err := g.Samples(&mask, reps)
		if err != nil {
			return s, fmt.Errorf("%d TPCs: %w", k, err)
		}
		sms := 0
		for _, i := range set {
			sms += len(t.TPCs[i].SMs)
		}
		s.Points = append(s.Points, report.Point{TPCs: k, SMs: sms, Stats: stats.Summarize(ms)})
		progress.report(k, len(t.TPCs))
	}
	return s, nil
}

// MIGSeries is the documented MiG sizes as a series without times.
func MIGSeries() report.Series {
	s := report.Series{Mechanism: "MiG", Note: "H100 instance sizes from NVIDIA's documentation; MiG cannot be enabled on this GPU"}
	for _, sms := range MIGSliceSMs {
		s.Points = append(s.Points, report.Point{SMs: sms, TPCs: sms / 2})
	}
	return s
}

// GranularityGreen times the GEMM (n x n, reps runs after a warm-up) in a
// green context of 1, 2, ... of the driver's smallest SM groups, and of all
// SMs, each context on a thread of its own.
func GranularityGreen(ordinal, n, reps int, progress Progress) (report.Series, error) {
	s := report.Series{Mechanism: "green contexts", Measured: true, Note: "cuDevSmResourceSplitByCount groups; SMs, not TPC sets; in one process only"}
	groups, rest, err := workload.GreenGroups(ordinal)
	if err != nil {
		return s, err
	}
	sizes := make([][]cuda.SMResource, 0, len(groups)+1)
	for k := 1; k <= len(groups); k++ {
		sizes = append(sizes, groups[:k])
	}
	if rest.SMCount() > 0 {
		sizes = append(sizes, append(append([]cuda.SMResource(nil), groups...), rest))
	}
	for i, res := range sizes {
		var ms []float64
		err := workload.OnThread(func() error {
			sess, gc, err := workload.OpenGreen(ordinal, "bench", res...)
			if err != nil {
				return err
			}
			defer gc.Destroy()
			g, err := workload.NewGEMM(sess, n)
			if err != nil {
				return err
			}
			defer g.Free()
			ms, err = g.Samples(nil, reps)
			return err
		})
		if err != nil {
			return s, fmt.Errorf("green context of %d SMs: %w", workload.SMsOf(res), err)
		}
		s.Points = append(s.Points, report.Point{SMs: workload.SMsOf(res), Stats: stats.Summarize(ms)})
		progress.report(i+1, len(sizes))
	}
	return s, nil
}

// MPSPercentages are the active-thread percentages that come closest to each
// TPC count 1..tpcs: MPS takes whole percents, not sets of TPCs.
func MPSPercentages(tpcs int) []int {
	out := make([]int, tpcs)
	for k := 1; k <= tpcs; k++ {
		out[k-1] = int(math.Ceil(100 * float64(k) / float64(tpcs)))
	}
	return out
}

// GranularityMPS times the GEMM in a worker process under MPS at each
// active-thread percentage that MPSPercentages gives, one process each.
// d must be running.
func GranularityMPS(w Worker, d mps.Daemon, tpcs, sms int, progress Progress) (report.Series, error) {
	s := report.Series{Mechanism: "MPS active-thread %", Measured: true,
		Note: "one client process per size with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; SMs = percentage x SM count (MPS gives no set)"}
	for i, p := range MPSPercentages(tpcs) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		env := append(d.ClientEnv(mps.DefaultConnections), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(p))
		ms, err := w(ctx, env)
		cancel()
		if err != nil {
			return s, fmt.Errorf("MPS at %d%%: %w", p, err)
		}
		s.Points = append(s.Points, report.Point{TPCs: i + 1, SMs: int(math.Round(float64(p) * float64(sms) / 100)), Stats: stats.Summarize(ms)})
		progress.report(i+1, tpcs)
	}
	return s, nil
}

// plotGranularity draws median time against SMs per measured series, with
// the documented MiG sizes as vertical marks, to DIR/granularity.{png,svg}.
func plotGranularity(r *report.Result, dir string) error {
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
			if q.Stats.P50 <= 0 {
				return fmt.Errorf("cannot plot the granularity result: %s's median on %d SMs is %g ms, which its log scale cannot show",
					s.Mechanism, q.SMs, q.Stats.P50)
			}
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
	if top == 0 {
		return errors.New("cannot plot the granularity result: it has no measured points")
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

func granularityTable(tw io.Writer, r *report.Result) {
	fmt.Fprintln(tw, "TPCS\tSMS\tMEDIAN MS\tMIN MS\tP99 MS\tx ALL")
	for _, s := range r.Series {
		if !s.Measured || len(s.Points) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\n", s.Mechanism)
		all := s.Points[len(s.Points)-1].Stats.P50
		for _, p := range s.Points {
			tpcs := "-" // green contexts give SMs, not TPCs
			if p.TPCs > 0 {
				tpcs = fmt.Sprint(p.TPCs)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.2f\n", tpcs, p.SMs, p.Stats.P50, p.Stats.Min, p.Stats.P99, p.Stats.P50/all)
		}
	}
}
