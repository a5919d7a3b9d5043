package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
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
	return s
}

// ServeOptions are carve bench serve's flags.
type ServeOptions struct {
	LS           []string  // MODEL:MODE, MODEL one of ServeLSModels, MODE graph or eager, e.g. resnet50:graph, llm:graph
	BE           []string  // ServeBEJobs
	BEBatch      int       // images (sequences, for transformer-train) per BE step
	Rates        []float64 // LS requests per second
	Pattern      string    // poisson or onoff
	Duration     time.Duration
	LSTPCs       int   // the LS partition of carve tide
	StaticSplits []int // the LS partitions of carve static, in TPCs (the BE gets the rest)
	MPSSplits    []int // the LS's active-thread percentages (the BE gets the rest)
	Tide         []TideSetting
	Idle         bool     // also each tide setting's BE beside an LS tenant that gets no request
	Mechanisms   []string // timeslice, mps, mps-split, static, tide
	Orders       []string // ls-first, be-first: which program of a setup with both starts first (none: ls-first)
	Python       string
	Progress     Progress
	Log          io.Writer // each run's outcome as it comes, for a person watching
}

// ServeLSModels are the LS services serve_ls.py builds: torchvision's
// resnet50 and mobilenet_v3_large, bert-base, and llm, a causal LM that
// answers each request with a prefill and a greedy decode of 16 tokens.
var ServeLSModels = []string{"resnet50", "mobilenet_v3_large", "bert", "llm"}

// ServeBEJobs are the BE jobs serve_be.py runs: densenet161 inference,
// resnet50 training and the training of a decoder-only transformer.
var ServeBEJobs = []string{"densenet161", "resnet50-train", "transformer-train"}

// ServeMechanisms are the ways of sharing serve can compare.
var ServeMechanisms = []string{"timeslice", "mps", "mps-split", "static", "tide"}

// ServeOrders are the orders in which serve can start a setup's two
// programs: the LS first, ready (its CUDA graph captured) before the BE
// starts; or the BE first, running while the LS starts, warms up and
// captures its graph.
var ServeOrders = []string{"ls-first", "be-first"}

// beFirstSuffix names, after its mechanism, a setup whose BE started first.
const beFirstSuffix = " (BE first)"

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
	for _, m := range o.Mechanisms {
		if !oneOf(m, ServeMechanisms...) {
			return fmt.Errorf("mechanism %q: want one of %s", m, strings.Join(ServeMechanisms, ", "))
		}
	}
	for i, x := range o.Orders {
		if !oneOf(x, ServeOrders...) {
			return fmt.Errorf("order %q: want %s", x, strings.Join(ServeOrders, " or "))
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
	if o.Pattern != "poisson" && o.Pattern != "onoff" {
		return fmt.Errorf("pattern %q: want poisson or onoff", o.Pattern)
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

// setup is how one mechanism starts the LS service and the BE job.
type setup struct {
	name           string
	lsPre, bePre   []string
	lsEnv, beEnv   []string
	withLS, withBE bool
	beFirst        bool    // the BE starts and runs before the LS starts; it is measured over the LS's serving
	lsRate         float64 // 0: the rate of the point; -1: an LS that gets no request (run at the first rate only)
}

func (e *Env) serveSetups(o ServeOptions) []setup {
	mps := e.MPSEnv()
	none := []string{"CUDA_MPS_PIPE_DIRECTORY=" + filepath.Join(e.MPS.Root, "none")}
	pct := func(p int) string { return fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", p) }
	var out []setup
	for _, m := range o.Mechanisms {
		switch m {
		case "timeslice":
			out = append(out, setup{name: "time slicing", lsEnv: none, beEnv: none, withLS: true, withBE: true})
		case "mps":
			out = append(out, setup{name: "MPS", lsEnv: mps, beEnv: mps, withLS: true, withBE: true})
		case "mps-split":
			for _, p := range o.MPSSplits {
				out = append(out, setup{name: fmt.Sprintf("MPS %d%%/%d%%", p, 100-p), withLS: true, withBE: true,
					lsEnv: append(append([]string{}, mps...), pct(p)), beEnv: append(append([]string{}, mps...), pct(100-p))})
			}
		case "static":
			for _, k := range o.StaticSplits {
				lsSet := partition.Pack(e.Topo, k, nil)
				beSet := partition.Pack(e.Topo, len(e.Topo.TPCs)-k, lsSet)
				out = append(out, setup{name: fmt.Sprintf("carve static %d/%d TPCs", len(lsSet), len(beSet)), withLS: true, withBE: true,
					lsPre: e.CarveRun(lsSet), bePre: e.CarveRun(beSet), lsEnv: mps, beEnv: mps})
			}
		case "tide":
			for _, t := range o.Tide {
				out = append(out, setup{name: "carve tide, " + t.String(), withLS: true, withBE: true,
					lsPre: e.Run(t.lsFlags(o.LSTPCs)...), bePre: e.Run(t.beFlags()...), lsEnv: mps, beEnv: mps})
			}
			for _, t := range o.Tide { // the BE's throughput with an idle LS tenant beside it
				if o.Idle {
					out = append(out, setup{name: "carve tide, no LS request, " + t.String(), withLS: true, withBE: true, lsRate: -1,
						lsPre: e.Run(t.lsFlags(o.LSTPCs)...), bePre: e.Run(t.beFlags()...), lsEnv: mps, beEnv: mps})
				}
			}
		}
	}
	return inOrders(out, o.Orders)
}

// inOrders is each setup in each order, the orders of a setup one after
// another; a setup whose BE starts first is named so.
func inOrders(setups []setup, orders []string) []setup {
	if len(orders) == 0 {
		orders = ServeOrders[:1]
	}
	var out []setup
	for _, s := range setups {
		for _, o := range orders {
			t := s
			if o == "be-first" {
				t.beFirst, t.name = true, s.name+beFirstSuffix
			}
			out = append(out, t)
		}
	}
	return out
}

// served is what one run of a setup measured.
type served struct {
	latencies []float64 // ms
	requests  int
	items     int    // the BE's, in unit
	unit      string // images, or sequences
	seconds   float64
	lsInfo    map[string]any // each program's model: its parameters and shape
	beInfo    map[string]any
}

// serveProc is one of the two programs of a run, started and ready.
type serveProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (w Workers) startServe(ctx context.Context, prefix, env []string, argv ...string) (*serveProc, error) {
	cmd := w.command(ctx, prefix, env, argv...)
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serveProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := p.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		p.stop()
		return nil, fmt.Errorf("%s did not get ready (%q, %v)", argv[0], line, err)
	}
	return p, nil
}

func (p *serveProc) stop() {
	p.in.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// serveGrace is how long after a run's time its programs may take to
// report: one that has not by then is killed (a kernel that never
// finishes would otherwise hold the run, and the GPU, for good).
var serveGrace = 90 * time.Second

// serveLine is the one line a serve program prints when it is done.
type serveLine struct {
	Latencies []float64      `json:"latencies_ms"` // the LS's
	Requests  int            `json:"requests"`
	Items     int            `json:"items"` // the BE's: images or sequences, as Unit says
	Unit      string         `json:"unit"`
	Seconds   float64        `json:"seconds"`
	Info      map[string]any `json:"info"` // the model's parameter count and shape
}

// runServe runs one setup at one rate and collects what its programs
// print. LS first: it starts the LS, then, once the LS is ready, the BE,
// and tells both to go when both are ready. BE first: it starts the BE and
// tells it to go, then starts the LS while the BE runs, and once the LS is
// ready tells it to go and marks the start of the BE's window, which it
// ends when the LS has reported: the BE is measured over the LS's serving.
func (w Workers) runServe(s setup, ls, be []string, lsRate float64, d time.Duration) (served, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+4*time.Minute)
	defer cancel()
	var lsProc, beProc *serveProc
	var r served
	defer func() {
		for _, p := range []*serveProc{lsProc, beProc} {
			if p != nil {
				p.stop()
			}
		}
	}()
	startLS := func() error {
		rate := lsRate
		if s.lsRate < 0 {
			rate = 0
		}
		argv := append(append([]string{}, ls...), fmt.Sprintf("--rate=%g", rate))
		p, err := w.startServe(ctx, s.lsPre, s.lsEnv, argv...)
		if err != nil {
			return fmt.Errorf("LS: %w", err)
		}
		lsProc = p
		return nil
	}
	beFirst := s.beFirst && s.withLS && s.withBE
	startBE := func() error {
		argv := be
		if beFirst {
			argv = append(append([]string{}, be...), "--marks")
		}
		p, err := w.startServe(ctx, s.bePre, s.beEnv, argv...)
		if err != nil {
			return fmt.Errorf("BE: %w", err)
		}
		beProc = p
		return nil
	}
	if beFirst {
		if err := startBE(); err != nil {
			return r, err
		}
		fmt.Fprintln(beProc.in, "go")
		if err := startLS(); err != nil {
			return r, err
		}
		fmt.Fprintln(lsProc.in, "go")
		fmt.Fprintln(beProc.in, "start") // the window's start
	} else {
		if s.withLS {
			if err := startLS(); err != nil {
				return r, err
			}
		}
		if s.withBE {
			if err := startBE(); err != nil {
				return r, err
			}
		}
		for _, p := range []*serveProc{lsProc, beProc} {
			if p != nil {
				fmt.Fprintln(p.in, "go")
			}
		}
	}
	late := time.AfterFunc(d+serveGrace, cancel)
	defer late.Stop()
	var v serveLine
	result := func(p *serveProc, which string) error {
		v = serveLine{}
		line, err := p.out.ReadString('\n')
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s gave no result within %v of its start (stopped; hung?)", p.cmd.Args[0], d+serveGrace)
		}
		if err != nil {
			return fmt.Errorf("%s ended without its results: %w", p.cmd.Args[0], err)
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return fmt.Errorf("the %s printed %q: %w", which, line, err)
		}
		return nil
	}
	if lsProc != nil {
		if err := result(lsProc, "LS"); err != nil {
			return r, err
		}
		r.latencies, r.requests, r.lsInfo = v.Latencies, v.Requests, v.Info
		if beFirst {
			fmt.Fprintln(beProc.in, "stop") // the window's end
		}
	}
	if beProc != nil {
		if err := result(beProc, "BE"); err != nil {
			return r, err
		}
		r.items, r.unit, r.seconds, r.beInfo = v.Items, v.Unit, v.Seconds, v.Info
	}
	return r, nil
}

// Serve measures LS services beside BE jobs under each mechanism: for each
// LS model, BE job and request rate, the LS's latency from arrival
// (queueing included) and the BE's throughput, each alone on the whole GPU
// and together under time slicing, MPS, MPS percentages, carve's static
// partitions and carve tide, each in each of o.Orders (a setup whose BE
// started first named so).
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
		"be_batch": o.BEBatch, "slo_rule": "2 x the LS's p99 alone on the whole GPU at the same rate"})
	orders := []any{} // as a saved result reads back
	for _, x := range o.Orders {
		orders = append(orders, x)
	}
	if len(orders) == 0 {
		orders = append(orders, ServeOrders[0])
	}
	r.Params["orders"] = orders
	slo := map[string]float64{}
	sloParam := map[string]any{} // as a saved result reads back
	var over, failed []any       // []any: the form a saved result reads back
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
		ls := []string{o.Python, "-c", workload.ServeLS, "--model=" + model, "--mode=" + mode, "--pattern=" + o.Pattern, d}
		for _, beName := range o.BE {
			be := []string{o.Python, "-c", workload.ServeBE, "--model=" + beName, fmt.Sprintf("--batch=%d", o.BEBatch), d}
			pair := lsName + " beside " + beName
			add := func(mech string, rate float64, m served) {
				s := report.Series{Mechanism: mech, Victim: lsName, Competitor: beName, Measured: true}
				if len(m.latencies) > 0 {
					st := stats.Summarize(m.latencies)
					s.Points = append(s.Points, report.Point{Label: fmt.Sprintf("LS latency @%g/s", rate), Stats: st})
					s.Points = append(s.Points, report.Point{Label: "LS p99.9", Stats: one(quantile(m.latencies, 0.999))})
					if v, ok := slo[fmt.Sprintf("%s @%g/s", lsName, rate)]; ok {
						s.Points = append(s.Points, report.Point{Label: "SLO attainment", Unit: "fraction", Stats: one(Attainment(m.latencies, v))})
					}
				}
				if m.seconds > 0 {
					s.Points = append(s.Points, report.Point{Label: "BE throughput", Unit: perSecond(m.unit), Stats: one(float64(m.items) / m.seconds)})
				}
				if m.lsInfo != nil {
					models[lsName] = m.lsInfo
				}
				if m.beInfo != nil {
					models[beName] = m.beInfo
				}
				r.Series = append(r.Series, s)
				if o.Log != nil {
					fmt.Fprintf(o.Log, "serve: %s @%g/s, %s: %s\n", pair, rate, mech, describeServed(m))
				}
				tick()
			}
			m, err := w.runServe(setup{withBE: true, beEnv: none}, nil, be, 0, o.Duration)
			if err != nil {
				return r, fmt.Errorf("%s alone: %w", beName, err)
			}
			add("BE alone, whole GPU", 0, m)
			for _, rate := range o.Rates {
				m, err := w.runServe(setup{withLS: true, lsEnv: none}, ls, nil, rate, o.Duration)
				if err != nil {
					return r, fmt.Errorf("%s alone at %g/s: %w", lsName, rate, err)
				}
				key := fmt.Sprintf("%s @%g/s", lsName, rate)
				st := stats.Summarize(m.latencies)
				slo[key] = 2 * st.P99
				sloParam[key] = slo[key]
				// the fastest request is about the service time: the LS sustains
				// about 1/that alone
				if capacity := 1000 / st.Min; rate > capacity/2 {
					over = append(over, fmt.Sprintf("%s: above half of the about %.0f/s it sustains alone", key, capacity))
					r.Params["over_half_capacity"] = over
				}
				add("LS alone, whole GPU", rate, m)
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
					add(s.name, rate, m)
				}
			}
		}
	}
	return r, nil
}

func describeServed(m served) string {
	var parts []string
	if len(m.latencies) > 0 {
		parts = append(parts, fmt.Sprintf("LS p50 %.2f p99 %.2f ms (%d requests)", quantile(m.latencies, 0.5), quantile(m.latencies, 0.99), len(m.latencies)))
	}
	if m.seconds > 0 {
		parts = append(parts, fmt.Sprintf("BE %.0f %s", float64(m.items)/m.seconds, perSecond(m.unit)))
	}
	return strings.Join(parts, ", ")
}

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
}

func servePoints(r *report.Result) []servePoint {
	slos, _ := r.Params["slo_ms"].(map[string]any)
	var out []servePoint
	for _, s := range r.Series {
		p := servePoint{pair: s.Victim + " beside " + s.Competitor, mech: s.Mechanism, slo: math.NaN(), attain: math.NaN()}
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
			}
		}
		if v, ok := slos[fmt.Sprintf("%s @%g/s", s.Victim, p.rate)].(float64); ok {
			p.slo = v
		}
		out = append(out, p)
	}
	return out
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
	fmt.Fprintln(tw, "PAIR\tRATE\tMECHANISM\tLS P50\tLS P99\tLS P99.9\tP99 VS ALONE\tSLO MS\tSLO MET\tBE /S\tBE VS ALONE")
	for _, p := range points {
		ratio, slo, be, met := "-", "-", "-", "-"
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\n", p.pair, rate, p.mech, lat, ratio, slo, met, p.be, be)
	}
	fmt.Fprintln(tw, "latency in ms from the request's arrival, queueing included; SLO: 2 x the LS's p99 alone on the whole GPU at the same rate")
	fmt.Fprintln(tw, "BE /S: "+beUnits(points))
	if models, ok := r.Params["models"].(map[string]any); ok && len(models) > 0 {
		fmt.Fprintln(tw, "models: "+describeModels(models))
	}
	for _, p := range points {
		if strings.HasSuffix(p.mech, beFirstSuffix) {
			fmt.Fprintln(tw, "(BE first): the BE started and ran before the LS started, warmed up and captured its graph; its throughput is over the LS's serving only; otherwise the LS was ready first")
			break
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
		pl.Legend.Top, pl.Legend.Left = true, true
		panels = append(panels, pl)
	}
	if len(panels) == 0 {
		return errors.New("serve result has no LS latencies to plot")
	}
	return report.SavePanels(panels, min(2, len(panels)), 8*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark))
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
