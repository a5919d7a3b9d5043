// carve bench enforcement: a GEMM victim in a share of the GPU while a
// competitor runs without pause in the rest, under each mechanism, with its
// plot and table.

package bench

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/workload"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// GreenNote says what the green-context series are: the documented API,
// two threads of one process.
const GreenNote = "green contexts (cuGreenCtxCreate), victim and competitor as two threads of one process: the API cannot partition separate processes"

// EnforcementOptions are carve bench enforcement's flags.
type EnforcementOptions struct {
	N, Samples int
	Share      float64  // the victim's share of the GPU
	Victims    []string // sgemm, torch
	Python     string   // with PyTorch, for the torch victim
	Progress   Progress
}

// Check rejects options that cannot run, before the GPU is asked.
func (o EnforcementOptions) Check() error {
	if err := checkShare("share", o.Share); err != nil {
		return err
	}
	if o.Samples < 1 {
		return errors.New("--samples: want at least 1")
	}
	for _, v := range o.Victims {
		if v != "sgemm" && v != "torch" {
			return fmt.Errorf("unknown victim %q: want sgemm or torch", v)
		}
	}
	if slices.Contains(o.Victims, "torch") {
		if err := exec.Command(o.Python, "-c", "import torch; assert torch.cuda.is_available()").Run(); err != nil {
			return fmt.Errorf("victim torch needs %s with a CUDA build of PyTorch (%v); leave it out with --victims sgemm", o.Python, err)
		}
	}
	return nil
}

// Enforcement runs a GEMM victim (o.Samples timed launches) in o.Share of
// the GPU while a competitor runs without pause in the rest: Mandelbrot
// (compute-heavy) or random walks over 1 GiB (memory-heavy). Victims are
// separate processes under e's MPS daemon; mechanisms are none (MPS without
// limits), MPS active-thread percentages, carve, and for sgemm green
// contexts (victim and competitor as two threads of this process). The
// reference is the victim's time alone on the whole GPU divided by the share.
func Enforcement(e *Env, o EnforcementOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	n, samples, share, victims, python, device := o.N, o.Samples, o.Share, o.Victims, o.Python, e.Device
	t, exe := e.Topo, e.Exe
	vset, cset := e.Split(share)
	pct := int(math.Round(100 * share))
	w := Workers{Exe: exe, Env: e.MPSEnv()}
	run := e.CarveRun
	setups := []Setup{
		{Mechanism: "none"},
		{Mechanism: fmt.Sprintf("MPS %d%%/%d%%", pct, 100-pct),
			VictimEnv: []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct)},
			CompEnv:   []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", 100-pct)}},
		{Mechanism: fmt.Sprintf("carve %d/%d TPCs", len(vset), len(cset)), VictimPrefix: run(vset), CompetitorPrefix: run(cset)},
	}
	argv := map[string][]string{
		"sgemm": {exe, "bench", "__gemm", fmt.Sprintf("--n=%d", n), fmt.Sprintf("--reps=%d", samples), fmt.Sprintf("--device=%d", device)},
		"torch": {python, "-c", workload.TorchMatmul, fmt.Sprintf("--n=%d", n), fmt.Sprintf("--reps=%d", samples)},
	}
	victimName := map[string]string{"sgemm": "sgemm", "torch": "torch.matmul"}
	refs := map[string]any{}
	r := newResult("enforcement", t, map[string]any{"n": n, "samples": samples, "share": share, "victim_tpcs": vset.String(),
		"competitor_tpcs": cset.String(), "mps_percent": pct, "scaled_alone_ms": refs})
	comps := []string{"", "compute", "memory"}
	step, total := 0, 0
	for _, v := range victims {
		total += 1 + len(setups)*len(comps) - 1
		if v == "sgemm" {
			total += len(comps)
		}
	}
	add := func(victim, name string, ms []float64) {
		s := report.Series{Mechanism: name, Victim: victim, Measured: true, Points: []report.Point{{Stats: stats.Summarize(ms)}}}
		if strings.HasPrefix(name, "green") {
			s.Note = GreenNote
		}
		r.Series = append(r.Series, s)
		step++
		o.Progress.report(step, total)
	}
	measure := func(v, name string, s Setup, comp string) error {
		if comp != "" {
			stop, err := w.StartCompetitor(s, comp)
			if err != nil {
				return err
			}
			defer stop()
		}
		var ms []float64
		if err := w.Victim(s, &ms, argv[v]...); err != nil {
			return fmt.Errorf("%s victim, %s: %w", v, name, err)
		}
		add(victimName[v], name, ms)
		return nil
	}
	label := func(mech, comp string) string {
		if comp == "" {
			return mech + ", alone"
		}
		return mech + " + " + comp
	}
	for _, v := range victims {
		if err := measure(v, "alone, whole GPU", setups[0], ""); err != nil {
			return nil, err
		}
		refs[victimName[v]] = r.Series[len(r.Series)-1].Points[0].Stats.P50 / share
		for _, s := range setups {
			for _, comp := range comps {
				if s.Mechanism == "none" && comp == "" {
					continue // the same as alone, whole GPU
				}
				if err := measure(v, label(s.Mechanism, comp), s, comp); err != nil {
					return nil, err
				}
			}
		}
	}
	// Green contexts last: this process then holds a context of its own,
	// which the MPS clients above never had to share the GPU with.
	if slices.Contains(victims, "sgemm") {
		groups, rest, err := workload.GreenGroups(device)
		if err != nil {
			return nil, fmt.Errorf("green contexts: %w", err)
		}
		a, b := workload.GreenShares(groups, rest, share)
		mech := fmt.Sprintf("green %d/%d SMs", workload.SMsOf(a), workload.SMsOf(b))
		r.Params["green_sms"] = []int{workload.SMsOf(a), workload.SMsOf(b)}
		for _, comp := range comps {
			var ms []float64
			err := workload.GreenPair(device, a, b, comp, func(s *workload.Session) error {
				g, err := workload.NewGEMM(s, n)
				if err != nil {
					return err
				}
				if e, err := g.Check(128, nil); err != nil || e > 1e-5 {
					return fmt.Errorf("GEMM check against the CPU: relative error %g, %v", e, err)
				}
				ms, err = g.Samples(nil, samples)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label(mech, comp), err)
			}
			add(victimName["sgemm"], label(mech, comp), ms)
		}
	}
	return r, nil
}

// plotEnforcement draws one panel per victim with a box per setup (see
// report.Boxes) and the victim's reference time (alone / share) as a dashed
// line, to DIR/enforcement.{png,svg}.
func plotEnforcement(r *report.Result, dir string) error {
	refs, _ := r.Params["scaled_alone_ms"].(map[string]any)
	var victims []string
	for _, s := range r.Series {
		victims = report.AddNew(victims, s.Victim)
	}
	var panels []*plot.Plot
	for _, v := range victims {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("victim %s beside competitors, %s (box p25-p75, bar p50, tick p99, whisker min-max)", v, r.Device)
		p.Y.Label.Text = "victim time per launch (ms)"
		var names []string
		var sts []stats.Stats
		for _, s := range r.Series {
			if s.Victim == v && len(s.Points) > 0 {
				names = append(names, s.Mechanism)
				sts = append(sts, s.Points[0].Stats)
			}
		}
		if err := report.Boxes(p, names, sts); err != nil {
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
	return report.SavePanels(panels, 1, 11*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark))
}

func enforcementTable(tw io.Writer, r *report.Result) {
	refs, _ := r.Params["scaled_alone_ms"].(map[string]any)
	fmt.Fprintln(tw, "VICTIM\tSETUP\tMIN\tP50\tP99\tMAX\tP99 VS REFERENCE")
	for _, s := range r.Series {
		if len(s.Points) == 0 {
			continue
		}
		st := s.Points[0].Stats
		vs := "-"
		if ref, ok := refs[s.Victim].(float64); ok {
			vs = fmt.Sprintf("%+.1f%%", 100*(st.P99/ref-1))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", s.Victim, s.Mechanism, st.Min, st.P50, st.P99, st.Max, vs)
	}
	if share, ok := r.Params["share"]; ok {
		fmt.Fprintf(tw, "reference: the victim's median alone on the whole GPU / %v; green contexts partition one process only\n", share)
	}
}
