// The serve benchmark, LS services beside BE jobs: its options and their
// checks, and its run over every pair, rate and mechanism into a result.
// Its setups and runs are in serve_setups.go, its table and plot in
// serve_table.go.

package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/workload"
)

// TideSetting is one pair of policies carve tide is measured with: the BE
// tenant's (its bounds, share and floor) and the LS tenant's (whether it
// keeps to its TPCs), both normalized, and the LS's reserved TPCs (0:
// ServeOptions.LSTPCs).
type TideSetting struct {
	BE, LS ctl.Policy
	LSTPCs int
}

// ServeMark is the NVTX range each request of bench serve's LS service
// is, in every setup (NVTX's no-op where no tool takes its ranges); a
// tide setting's LS with this mark (ctl.Policy.Mark) is judged by them.
const ServeMark = "request"

func (t TideSetting) beFlags() []string { return t.BE.RunArgs() }

func (t TideSetting) lsFlags(tpcs int) []string {
	return append(t.LS.RunArgs(), "-n", strconv.Itoa(cmp.Or(t.LSTPCs, tpcs)))
}

func (t TideSetting) String() string {
	s := fmt.Sprintf("%d in flight, %v queued, share %g", t.BE.Inflight, t.BE.Queue, t.BE.Share)
	if t.BE.Floor > 0 {
		s += fmt.Sprintf(" on %d TPCs", t.BE.Floor)
	}
	if t.BE.Slice > 0 {
		s += fmt.Sprintf(", cut into %v pieces", t.BE.Slice)
	}
	if t.LSTPCs > 0 {
		s += fmt.Sprintf(", LS %d TPCs", t.LSTPCs)
	}
	if t.LS.Own {
		s += " own"
	}
	if t.LS.SLO != (ctl.SLO{}) {
		s += ", SLO " + t.LS.SLO.String()
	}
	if t.LS.Mark != "" {
		s += ", requests marked"
	}
	if t.BE.Kernels != "" {
		s += ", BE kernels " + filepath.Base(t.BE.Kernels)
	}
	return s
}

// ServeOptions are carve bench serve's flags.
type ServeOptions struct {
	LS           []string  // MODEL:MODE, MODEL one of ServeLSModels, MODE graph or eager, e.g. resnet50:graph, llm:graph
	BE           []string  // ServeBEJobs
	BEBatch      int       // images (sequences, for transformer-train) per BE step
	Rates        []float64 // LS requests per second
	Pattern      string    // poisson, onoff or step (StepRates)
	Duration     time.Duration
	LSTPCs       int   // the LS partition of carve tide
	StaticSplits []int // the LS partitions of carve static, in TPCs (the BE gets the rest)
	MPSSplits    []int // the LS's active-thread percentages (the BE gets the rest)
	Tide         []TideSetting
	Idle         bool     // also each tide setting's BE beside an LS tenant that gets no request
	Mechanisms   []string // timeslice, mps, mps-split, static, tide
	Orders       []string // ls-first, be-first, be-ready-first: which program of a setup with both starts first (none: ls-first)
	Python       string
	Progress     Progress
	Log          io.Writer // each run's outcome as it comes, for a person watching
}

// ServeLSModels are the LS services serve_ls.py builds: torchvision's
// resnet50, mobilenet_v3_large and efficientnet_b0, bert-base, and llm, a
// causal LM that answers each request with a prefill and a greedy decode
// of 16 tokens.
var ServeLSModels = []string{"resnet50", "mobilenet_v3_large", "efficientnet_b0", "bert", "llm"}

// ServeBEJobs are the BE jobs serve_be.py runs: densenet161 and vit_b_16
// inference, resnet50 training and the training of a decoder-only
// transformer.
var ServeBEJobs = []string{"densenet161", "vit_b_16", "resnet50-train", "transformer-train"}

// ServeMechanisms are the ways of sharing serve compares by default.
var ServeMechanisms = []string{"timeslice", "mps", "mps-split", "static", "tide"}

// ServeHeld is a reference serve measures where asked, beside
// ServeMechanisms: the LS and BE under carve, the BE paused while the LS
// serves (holdBE), its process there and its kernels not: the most any
// SLO could give the LS beside that BE.
const ServeHeld = "held"

// ServeOrders are the orders in which serve can start a setup's two
// programs: the LS first, ready (its CUDA graph captured) before the BE
// starts; the BE first, running while the LS starts, warms up and
// captures its graph; or the BE ready first (its CUDA context made, its
// model warmed up), then idle while the LS starts, both told to go
// together: what of the BE-first order comes from the BE's start alone.
var ServeOrders = []string{"ls-first", "be-first", "be-ready-first"}

// beFirstSuffix and beReadySuffix name, after its mechanism, a setup
// whose BE started first, running or idle.
const (
	beFirstSuffix = " (BE first)"
	beReadySuffix = " (BE ready first)"
)

// Check rejects options that cannot run, before the GPU is asked.
func (o ServeOptions) Check() error {
	if len(o.LS) == 0 || len(o.BE) == 0 || len(o.Rates) == 0 || len(o.Mechanisms) == 0 {
		return errors.New("--ls, --be, --rates and --mechanisms: give at least one each")
	}
	imports := "torch, torchvision"
	for _, l := range o.LS {
		m, mode, _ := strings.Cut(l, ":")
		if !oneOf(m, ServeLSModels...) || !oneOf(mode, "graph", "eager") {
			return fmt.Errorf("LS %q: want MODEL:MODE, MODEL one of %s, MODE graph or eager (e.g. llm:graph)", l, strings.Join(ServeLSModels, ", "))
		}
		if oneOf(m, "bert", "llm") {
			imports = "torch, torchvision, transformers"
		}
	}
	for _, b := range o.BE {
		if !oneOf(b, ServeBEJobs...) {
			return fmt.Errorf("BE %q: want one of %s", b, strings.Join(ServeBEJobs, ", "))
		}
		if b == "transformer-train" {
			imports = "torch, torchvision, transformers"
		}
	}
	known := append(slices.Clip(ServeMechanisms), ServeHeld)
	for _, m := range o.Mechanisms {
		if !oneOf(m, known...) {
			return fmt.Errorf("mechanism %q: want one of %s", m, strings.Join(known, ", "))
		}
	}
	for i, x := range o.Orders {
		if !oneOf(x, ServeOrders...) {
			return fmt.Errorf("order %q: want one of %s", x, strings.Join(ServeOrders, ", "))
		}
		if oneOf(x, o.Orders[:i]...) {
			return fmt.Errorf("order %q given twice", x)
		}
	}
	for _, r := range o.Rates {
		if r <= 0 || math.IsInf(r, 0) || math.IsNaN(r) {
			return fmt.Errorf("rate %g: want requests per second above 0", r)
		}
	}
	for _, p := range o.MPSSplits {
		if p < 1 || p > 99 {
			return fmt.Errorf("MPS split %d%%: want 1 to 99", p)
		}
	}
	for _, p := range o.StaticSplits {
		if p < 1 {
			return fmt.Errorf("static split %d TPCs: want at least 1", p)
		}
	}
	if !oneOf(o.Pattern, "poisson", "onoff", "step") {
		return fmt.Errorf("pattern %q: want poisson, onoff or step", o.Pattern)
	}
	if o.Duration < time.Second || o.Duration > time.Hour || o.LSTPCs < 1 || o.BEBatch < 1 {
		return errors.New("--duration: 1s to 1h; --ls-tpcs, --be-batch: at least 1")
	}
	if out, err := exec.Command(o.Python, "-c", "import "+imports+"; assert torch.cuda.is_available()").CombinedOutput(); err != nil {
		return fmt.Errorf("%s cannot run the models (it needs %s and a GPU; --python names another): %w\n%s", o.Python, imports, err, lastLines(out, 3))
	}
	return nil
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// Serve measures LS services beside BE jobs under each mechanism: for each
// LS model, BE job and request rate, the LS's latency from arrival
// (queueing included) and the BE's throughput, each alone on the whole GPU
// and together under time slicing, MPS, MPS percentages, carve's static
// partitions and carve tide, each in each of o.Orders (a setup whose BE
// started first named so); together, also the BE's recovery after the
// LS's last request (Recovery) and, under a tide setting whose SLO is a
// time, the LS's attainment of it.
func Serve(e *Env, o ServeOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	ks := append([]int{o.LSTPCs}, o.StaticSplits...)
	for _, t := range o.Tide {
		ks = append(ks, t.LSTPCs)
	}
	for _, k := range ks {
		if k >= len(e.Topo.TPCs) {
			return nil, fmt.Errorf("an LS partition of %d TPCs leaves none of the %d for the BE", k, len(e.Topo.TPCs))
		}
	}
	w := Workers{Exe: e.Exe}
	setups := e.serveSetups(o)
	none := []string{"CUDA_MPS_PIPE_DIRECTORY=" + filepath.Join(e.MPS.Root, "none")}
	r := newResult("serve", e.Topo, map[string]any{"duration_s": o.Duration.Seconds(), "pattern": o.Pattern, "ls_tpcs": o.LSTPCs, "static_splits": o.StaticSplits,
		"be_batch": o.BEBatch, "slo_rule": "2 x the LS's p99 alone on the whole GPU at the same rate",
		"recovery_rule": fmt.Sprintf("from the LS's last request's completion until the BE's rate over its last steps of %v or more reaches %g%% of its rate alone, seen for %v after it",
			RecoveryWindow, 100*RecoveryShare, RecoveryTail)})
	orders := []any{} // as a saved result reads back
	for _, x := range o.Orders {
		orders = append(orders, x)
	}
	if len(orders) == 0 {
		orders = append(orders, ServeOrders[0])
	}
	r.Params["orders"] = orders
	slo := map[string]float64{}
	phaseSLO := map[string][]float64{} // --pattern step: each phase's, of the LS alone
	sloParam := map[string]any{}       // as a saved result reads back
	var over, failed []any             // []any: the form a saved result reads back
	r.Params["slo_ms"] = sloParam
	models := map[string]any{} // each LS and BE's model, as its program described it
	r.Params["models"] = models
	idle := 0
	for _, s := range setups {
		if s.lsRate < 0 {
			idle++
		}
	}
	step, total := 0, len(o.LS)*len(o.BE)*(len(o.Rates)*(1+len(setups)-idle)+idle+1)
	tick := func() { step++; o.Progress.report(step, total) }
	d := fmt.Sprintf("--duration=%g", o.Duration.Seconds())
	for _, lsName := range o.LS {
		model, mode, _ := strings.Cut(lsName, ":")
		ls := []string{o.Python, "-c", workload.ServeLS, "--model=" + model, "--mode=" + mode, "--pattern=" + o.Pattern, "--mark=" + ServeMark, d}
		if o.Pattern == "step" {
			ls = append(ls, "--steps="+stepsArg())
		}
		for _, beName := range o.BE {
			be := []string{o.Python, "-c", workload.ServeBE, "--model=" + beName, fmt.Sprintf("--batch=%d", o.BEBatch), d}
			pair := lsName + " beside " + beName
			var beAlone float64 // the BE's throughput alone on the whole GPU
			add := func(set setup, rate float64, m served) {
				s := report.Series{Mechanism: set.name, Victim: lsName, Competitor: beName, Measured: true}
				if m.steerErr != nil {
					s.Note = "not steered: " + m.steerErr.Error()
				}
				if m.holdErr != nil {
					s.Note = "not held: " + m.holdErr.Error()
				}
				if len(m.latencies) > 0 {
					st := stats.Summarize(m.latencies)
					s.Points = append(s.Points, report.Point{Label: fmt.Sprintf("LS latency @%g/s", rate), Stats: st})
					s.Points = append(s.Points, report.Point{Label: "LS p99.9", Stats: one(quantile(m.latencies, 0.999))})
					if v, ok := slo[fmt.Sprintf("%s @%g/s", lsName, rate)]; ok {
						s.Points = append(s.Points, report.Point{Label: "SLO attainment", Unit: "fraction", Stats: one(Attainment(m.latencies, v))})
						s.Points = append(s.Points, warmPoints(m, o.Duration, v)...)
					}
					s.Points = append(s.Points, ownSLOPoints(set.slo, m.latencies)...)
					if o.Pattern == "step" {
						s.Points = append(s.Points, stepPoints(m, o.Duration, phaseSLO[fmt.Sprintf("%s @%g/s", lsName, rate)])...)
					}
				}
				if m.periods != nil && m.periods.Count() > 0 {
					s.Points = append(s.Points, report.Point{Label: "LS busy periods", Stats: periodStats(*m.periods)})
				}
				if m.seconds > 0 {
					s.Points = append(s.Points, report.Point{Label: "BE throughput", Unit: perSecond(m.unit), Stats: one(float64(m.items) / m.seconds)})
				}
				s.Points = append(s.Points, recoveryPoints(m, o.BEBatch, beAlone)...)
				s.Points = append(s.Points, steerPoints(m.steps)...)
				if m.lsInfo != nil {
					models[lsName] = m.lsInfo
				}
				if m.beInfo != nil {
					models[beName] = m.beInfo
				}
				r.Series = append(r.Series, s)
				if o.Log != nil {
					fmt.Fprintf(o.Log, "serve: %s @%g/s, %s: %s\n", pair, rate, set.name, describeServed(m))
					for _, st := range m.steps {
						fmt.Fprintf(o.Log, "serve:   SLO step %s\n", describeStep(st))
					}
				}
				tick()
			}
			m, err := w.runServe(setup{withBE: true, beEnv: none}, nil, be, 0, o.Duration)
			if err != nil {
				return r, fmt.Errorf("%s alone: %w", beName, err)
			}
			if m.seconds > 0 {
				beAlone = float64(m.items) / m.seconds
			}
			add(setup{name: "BE alone, whole GPU"}, 0, m)
			for _, rate := range o.Rates {
				m, err := w.runServe(setup{withLS: true, lsEnv: none}, ls, nil, rate, o.Duration)
				if err != nil {
					return r, fmt.Errorf("%s alone at %g/s: %w", lsName, rate, err)
				}
				key := fmt.Sprintf("%s @%g/s", lsName, rate)
				st := stats.Summarize(m.latencies)
				slo[key] = 2 * st.P99
				sloParam[key] = slo[key]
				if o.Pattern == "step" {
					for _, ph := range phases(m, o.Duration) {
						phaseSLO[key] = append(phaseSLO[key], 2*quantile(ph, 0.99))
					}
				}
				// the fastest request is about the service time: the LS sustains
				// about 1/that alone
				if capacity := 1000 / st.Min; rate > capacity/2 {
					over = append(over, fmt.Sprintf("%s: above half of the about %.0f/s it sustains alone", key, capacity))
					r.Params["over_half_capacity"] = over
				}
				add(setup{name: "LS alone, whole GPU"}, rate, m)
				for _, s := range setups {
					if s.lsRate < 0 && rate != o.Rates[0] {
						continue
					}
					m, err := w.runServe(s, ls, be, rate, o.Duration)
					if err != nil { // a point lost, not the run: say so, and go on
						failed = append(failed, fmt.Sprintf("%s, %s at %g/s: %v", pair, s.name, rate, err))
						r.Params["failed"] = failed
						if o.Log != nil {
							fmt.Fprintf(o.Log, "serve: %s\n", failed[len(failed)-1])
						}
						tick()
						continue
					}
					add(s, rate, m)
				}
			}
		}
	}
	return r, nil
}

func describeServed(m served) string {
	var parts []string
	if m.steerErr != nil {
		parts = append(parts, fmt.Sprintf("NOT STEERED (the SLO controller: %v)", m.steerErr))
	}
	if len(m.latencies) > 0 {
		parts = append(parts, fmt.Sprintf("LS p50 %.2f p99 %.2f ms (%d requests)", quantile(m.latencies, 0.5), quantile(m.latencies, 0.99), len(m.latencies)))
	}
	if m.seconds > 0 {
		parts = append(parts, fmt.Sprintf("BE %.0f %s", float64(m.items)/m.seconds, perSecond(m.unit)))
	}
	return strings.Join(parts, ", ")
}

// steerPoints sum up the SLO controller's steps over the LS's serving:
// the BE's level, the estimate it held under the target, the target, and
// the LS's utilization, each a distribution over the steps.
func steerPoints(steps []steerStep) []report.Point {
	if len(steps) == 0 {
		return nil
	}
	var level, est, target, rho []float64
	for _, st := range steps {
		level = append(level, st.v.Level)
		est = append(est, ms(st.v.Estimate))
		target = append(target, ms(st.v.Target))
		rho = append(rho, st.v.Utilization)
	}
	return []report.Point{
		{Label: "SLO level", Unit: "fraction", Stats: stats.Summarize(level)},
		{Label: "SLO estimate", Stats: stats.Summarize(est)},
		{Label: "SLO target", Stats: stats.Summarize(target)},
		{Label: "LS utilization", Unit: "fraction", Stats: stats.Summarize(rho)},
	}
}

// describeStep is one step of the SLO controller, for the log.
func describeStep(st steerStep) string {
	v := st.v
	of := "periods'"
	if v.Marked {
		of = "marked requests'"
	}
	s := fmt.Sprintf("+%.1fs: estimate %.2f ms (target %.2f), %s p99 %.2f ms (%d), utilization %.2f, BE level %.3f",
		st.at.Seconds(), ms(v.Estimate), ms(v.Target), of, ms(v.P99), v.Periods, v.Utilization, v.Level)
	if v.Calibrating {
		s += ", calibrating"
	} else if v.Paused {
		s += ", paused"
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perSecond is the unit of a BE's throughput in unit: img/s, as results
// have always said for images, or seq/s.
func perSecond(unit string) string {
	switch unit {
	case "images", "":
		return "img/s"
	case "sequences":
		return "seq/s"
	}
	return unit + "/s"
}

// lastLines is the end of a program's output, for an error.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// quantile is the q-th quantile of xs by nearest rank.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(len(s)-1, i))]
}

// one is a single value as statistics.
func one(v float64) stats.Stats {
	return stats.Stats{N: 1, Min: v, P25: v, P50: v, P75: v, P99: v, Max: v, Mean: v}
}

// periodStats are a histogram's count and quantiles, in ms.
func periodStats(h ctl.Hist) stats.Stats {
	ms := func(q float64) float64 { return float64(h.Quantile(q)) / 1e6 }
	return stats.Stats{N: int(h.Count()), P25: ms(0.25), P50: ms(0.5), P75: ms(0.75), P99: ms(0.99),
		Mean: float64(h.Sum) / 1e6 / float64(h.Count())}
}

// Attainment is the share of latencies at most slo.
func Attainment(latencies []float64, slo float64) float64 {
	if len(latencies) == 0 {
		return math.NaN()
	}
	n := 0
	for _, l := range latencies {
		if l <= slo {
			n++
		}
	}
	return float64(n) / float64(len(latencies))
}

// StepRates are --pattern step's: the LS's rate in each third of the
// duration is the rate times these (at half its capacity, 25%, 75% and
// 25% of it), passed to serve_ls.py as --steps.
var StepRates = []float64{0.5, 1.5, 0.5}

// stepsArg is StepRates as serve_ls.py's --steps: "0.5,1.5,0.5".
func stepsArg() string {
	var out []string
	for _, r := range StepRates {
		out = append(out, strconv.FormatFloat(r, 'g', -1, 64))
	}
	return strings.Join(out, ",")
}

// phases are m's latencies in each third of the duration d, by their
// requests' arrivals (--pattern step's phases); none where the LS said no
// arrivals.
func phases(m served, d time.Duration) [][]float64 {
	if len(m.arrivals) != len(m.latencies) {
		return nil
	}
	out := make([][]float64, len(StepRates))
	third := d.Seconds() / float64(len(StepRates))
	for i, at := range m.arrivals {
		k := min(max(int(at/third), 0), len(StepRates)-1)
		out[k] = append(out[k], m.latencies[i])
	}
	return out
}

// Warm is how much of a run's start its warm attainment leaves out: an LS
// started beside a running BE, or to a queue of the requests its start
// kept waiting, is judged from its first request on, but what follows it
// (carve's calibration of a multiple SLO is made in it) weighs more in a
// run of 8 s than in a service's day.
const Warm = time.Second

// warmPoints is the attainment of slo by the requests that arrived Warm
// or more after the LS's start: "SLO attainment, warm". None where the
// LS said no arrivals, or the run is no longer than twice Warm.
func warmPoints(m served, d time.Duration, slo float64) []report.Point {
	if len(m.arrivals) != len(m.latencies) || d <= 2*Warm {
		return nil
	}
	var warm []float64
	for i, at := range m.arrivals {
		if at >= Warm.Seconds() {
			warm = append(warm, m.latencies[i])
		}
	}
	if len(warm) == 0 {
		return nil
	}
	return []report.Point{{Label: "SLO attainment, warm", Unit: "fraction", Stats: one(Attainment(warm, slo))}}
}

// stepPoints are each phase's LS latency and, where slos has the alone
// run's (2x each phase's p99 alone), its attainment: "LS latency, phase 2
// of 3 (1.5x the rate)", "SLO attainment, phase 2 of 3".
func stepPoints(m served, d time.Duration, slos []float64) []report.Point {
	var out []report.Point
	for k, ph := range phases(m, d) {
		if len(ph) == 0 {
			continue
		}
		name := fmt.Sprintf("phase %d of %d (%gx the rate)", k+1, len(StepRates), StepRates[k])
		out = append(out, report.Point{Label: "LS latency, " + name, Stats: stats.Summarize(ph)})
		if k < len(slos) {
			out = append(out, report.Point{Label: "SLO attainment, " + name, Unit: "fraction", Stats: one(Attainment(ph, slos[k]))})
		}
	}
	return out
}

// ownSLOPoints judge latencies against slo, a tide setting's, where it is
// a time (slo=9ms; a multiple is of an estimate the run does not make):
// "its own SLO" in ms and "SLO attainment, its own SLO", the share of
// latencies within it. None for no SLO, a multiple, or no latencies.
func ownSLOPoints(slo ctl.SLO, latencies []float64) []report.Point {
	d, ok := slo.Of(0)
	if !ok || len(latencies) == 0 {
		return nil
	}
	return []report.Point{{Label: "its own SLO", Stats: one(ms(d))},
		{Label: "SLO attainment, its own SLO", Unit: "fraction", Stats: one(Attainment(latencies, ms(d)))}}
}

// The BE's recovery after the LS's last request (Recovery): its rate is
// taken over its last steps spanning at least RecoveryWindow (one step,
// where a step takes longer), and it is back at RecoveryShare of its rate
// alone; it runs RecoveryTail on after the LS has served its last request
// for that to be seen.
const (
	RecoveryWindow = 200 * time.Millisecond
	RecoveryShare  = 0.9
	RecoveryTail   = 1500 * time.Millisecond
)

// tailRates are the BE's rates after last (items/s), each over its steps
// since the latest end at least RecoveryWindow before one at or after last
// (s, on last's clock, ascending), with when each was seen (s after last);
// none where no end after last has one RecoveryWindow before it.
func tailRates(ends []float64, last float64, perStep int) (at, rate []float64) {
	w := RecoveryWindow.Seconds()
	for j, t := range ends {
		if t < last {
			continue
		}
		i := j - 1
		for i >= 0 && t-ends[i] < w {
			i--
		}
		if i >= 0 {
			at = append(at, t-last)
			rate = append(rate, float64(perStep*(j-i))/(t-ends[i]))
		}
	}
	return at, rate
}

// Recovery is how long after last (s) the BE's rate first reached
// RecoveryShare of alone (items/s), given the ends of its steps (s, on
// last's clock, ascending) of perStep items each: at the first of its
// tailRates that does. ok is false where none does; d is then how long
// after last its rate was seen, NaN where never (too few steps to judge).
func Recovery(ends []float64, last float64, perStep int, alone float64) (d float64, ok bool) {
	at, rate := tailRates(ends, last, perStep)
	return recovered(at, rate, alone)
}

// recovered is Recovery of the tailRates at, rate.
func recovered(at, rate []float64, alone float64) (d float64, ok bool) {
	for i, r := range rate {
		if r >= RecoveryShare*alone {
			return at[i], true
		}
	}
	if len(at) == 0 {
		return math.NaN(), false
	}
	return at[len(at)-1], false
}

// lsDone is when m's LS served its last request, in s on the clock of its
// start (CLOCK_MONOTONIC); ok is false where it served none, or did not
// say when it started.
func lsDone(m served) (t float64, ok bool) {
	if m.lsStart == 0 || len(m.arrivals) == 0 || len(m.arrivals) != len(m.latencies) {
		return 0, false
	}
	for i, at := range m.arrivals {
		t = max(t, at+m.latencies[i]/1000)
	}
	return m.lsStart + t, true
}

// recoveryPoints are m's BE recovery after its LS's last request
// (Recovery), its steps perStep items each and alone its rate alone:
// "BE recovery" (s), or "BE recovery, not within" (s: how long after the
// LS's last request its rate was seen); with "BE rate after the LS's last request",
// the distribution of its tailRates as fractions of alone (where a BE
// that does not recover stands: below the mark throughout, or short of
// it by a little). None where the run had no LS request or no BE, or too
// few BE steps to judge.
func recoveryPoints(m served, perStep int, alone float64) []report.Point {
	last, ok := lsDone(m)
	if !ok || alone <= 0 {
		return nil
	}
	at, rate := tailRates(m.beEnds, last, perStep)
	d, ok := recovered(at, rate, alone)
	var pts []report.Point
	switch {
	case ok:
		pts = []report.Point{{Label: "BE recovery", Unit: "s", Stats: one(d)}}
	case !math.IsNaN(d):
		pts = []report.Point{{Label: "BE recovery, not within", Unit: "s", Stats: one(d)}}
	default:
		return nil
	}
	for i := range rate {
		rate[i] /= alone
	}
	return append(pts, report.Point{Label: "BE rate after the LS's last request", Unit: "fraction of alone", Stats: stats.Summarize(rate)})
}
