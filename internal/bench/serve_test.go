// Tests of the serve benchmark's options and statistics (serve.go).

package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/slo"
)

func TestAttainmentAndQuantile(t *testing.T) {
	lat := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 100}
	if a := Attainment(lat, 9); a != 0.9 {
		t.Errorf("attainment %g, want 0.9", a)
	}
	if !math.IsNaN(Attainment(nil, 1)) {
		t.Error("attainment of nothing is a number")
	}
	if q := quantile(lat, 0.99); q != 100 {
		t.Errorf("p99 of 10 by nearest rank: %g", q)
	}
	if q := quantile(lat, 0.5); q != 5 {
		t.Errorf("p50: %g", q)
	}
}

func TestServeOptionsCheck(t *testing.T) {
	good := ServeOptions{LS: []string{"resnet50:graph"}, BE: []string{"densenet161"}, BEBatch: 64, Rates: []float64{100},
		Pattern: "poisson", Duration: 1e9, LSTPCs: 16, Mechanisms: []string{"tide"}, Python: "/nonexistent/python"}
	for _, tc := range []struct {
		change func(*ServeOptions)
		want   string
	}{
		{func(o *ServeOptions) { o.LS = []string{"vgg:graph"} }, `LS "vgg:graph"`},
		{func(o *ServeOptions) { o.LS = []string{"gpt:graph"} }, "bert, llm, MODE graph or eager"},
		{func(o *ServeOptions) { o.LS = []string{"llm:compiled"} }, `LS "llm:compiled"`},
		{func(o *ServeOptions) { o.BE = []string{"gpt"} }, `BE "gpt": want one of densenet161, vit_b_16, resnet50-train, transformer-train`},
		// the new models pass, and the Python must have transformers
		{func(o *ServeOptions) { o.LS = []string{"llm:graph", "llm:eager"} }, "needs torch, torchvision, transformers"},
		{func(o *ServeOptions) { o.BE = []string{"transformer-train"} }, "needs torch, torchvision, transformers"},
		{func(o *ServeOptions) {}, "needs torch, torchvision and"},
		{func(o *ServeOptions) { o.Rates = []float64{0} }, "rate 0"},
		{func(o *ServeOptions) { o.Mechanisms = []string{"mig"} }, `mechanism "mig"`},
		{func(o *ServeOptions) { o.MPSSplits = []int{100} }, "MPS split 100%"},
		{func(o *ServeOptions) { o.StaticSplits = []int{0} }, "static split 0 TPCs"},
		{func(o *ServeOptions) { o.Pattern = "burst" }, `pattern "burst": want poisson, onoff or step`},
		{func(o *ServeOptions) { o.Pattern = "step" }, "needs torch, torchvision and"}, // step passes
		{func(o *ServeOptions) { o.Duration = time.Millisecond }, "--duration: 1s to 1h"},
		{func(o *ServeOptions) { o.Duration = 2 * time.Hour }, "--duration: 1s to 1h"},
		{func(o *ServeOptions) { o.Orders = []string{"ls-first", "lsfirst"} }, `order "lsfirst": want one of ls-first, be-first, be-ready-first`},
		{func(o *ServeOptions) { o.Orders = []string{"ls-first", "ls-first"} }, `order "ls-first" given twice`},
		{func(o *ServeOptions) {}, "no such file"},
	} {
		o := good
		tc.change(&o)
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", o, err, tc.want)
		}
	}
}

// TestSteerPoints: the SLO controller's steps over a serving become the
// distributions of the BE's level, the estimate, the target and the LS's
// utilization, and a log line each; no steps, no points.
func TestSteerPoints(t *testing.T) {
	if p := steerPoints(nil); p != nil {
		t.Errorf("no steps: %+v, want no points", p)
	}
	steps := []steerStep{
		{100 * time.Millisecond, slo.View{Level: 0.5, Estimate: 4 * time.Millisecond, Target: 10 * time.Millisecond, Utilization: 0.6, Paused: true}},
		{200 * time.Millisecond, slo.View{Level: 0.25, Estimate: 8 * time.Millisecond, Target: 10 * time.Millisecond, Utilization: 0.7, Calibrating: true}},
	}
	want := map[string][2]float64{"SLO level": {0.25, 0.5}, "SLO estimate": {4, 8}, "SLO target": {10, 10}, "LS utilization": {0.6, 0.7}}
	got := steerPoints(steps)
	if len(got) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(got), len(want), got)
	}
	for _, p := range got {
		w, ok := want[p.Label]
		if !ok || p.Stats.Min != w[0] || p.Stats.Max != w[1] || p.Stats.N != 2 {
			t.Errorf("%s: %+v, want min %g max %g of 2", p.Label, p.Stats, w[0], w[1])
		}
	}
	if s := describeStep(steps[1]); !strings.Contains(s, "+0.2s: estimate 8.00 ms (target 10.00)") || !strings.Contains(s, "BE level 0.250, calibrating") {
		t.Errorf("log line %q", s)
	}
	if s := describeStep(steps[0]); !strings.HasSuffix(s, "BE level 0.500, paused") {
		t.Errorf("log line %q, want the pause said", s)
	}
}

// TestStepPhases: --pattern step's requests fall in the third of the
// duration they arrived in, each phase's p99 and attainment against its
// own SLO are reported, and a run whose LS gave no arrivals has none.
func TestStepPhases(t *testing.T) {
	m := served{latencies: []float64{1, 2, 30, 40, 50, 3}, arrivals: []float64{0.1, 3.2, 3.4, 4.0, 6.5, 8.9}}
	got := phases(m, 9*time.Second)
	want := [][]float64{{1}, {2, 30, 40}, {50, 3}}
	if len(got) != len(want) {
		t.Fatalf("phases %v, want %v", got, want)
	}
	for k := range want {
		if len(got[k]) != len(want[k]) || (len(got[k]) > 0 && got[k][0] != want[k][0]) {
			t.Fatalf("phase %d: %v, want %v", k+1, got[k], want[k])
		}
	}
	pts := stepPoints(m, 9*time.Second, []float64{10, 35, 10})
	if len(pts) != 6 || pts[2].Label != "LS latency, phase 2 of 3 (1.5x the rate)" || pts[3].Stats.Mean != 2.0/3 ||
		pts[5].Label != "SLO attainment, phase 3 of 3 (0.5x the rate)" || pts[5].Stats.Mean != 0.5 {
		t.Errorf("points %+v", pts)
	}
	if got := phases(served{latencies: []float64{1}}, time.Second); got != nil {
		t.Errorf("no arrivals: phases %v, want none", got)
	}
	if stepsArg() != "0.5,1.5,0.5" {
		t.Errorf("--steps=%s", stepsArg())
	}
}

// TestWarmPoints: the warm attainment takes the requests that arrived
// bench.Warm or more after the LS's start; none in a run of twice Warm or
// less, nor where the LS said no arrivals.
func TestWarmPoints(t *testing.T) {
	m := served{latencies: []float64{30, 40, 2, 3, 50, 4}, arrivals: []float64{0.1, 0.9, 1.0, 2.5, 4.0, 7.9}}
	got := warmPoints(m, 8*time.Second, 10)
	if len(got) != 1 || got[0].Label != "SLO attainment, warm" || got[0].Unit != "fraction" || got[0].Stats.P50 != 0.75 {
		t.Errorf("points %+v, want 3 of the 4 from 1 s on within 10 ms", got)
	}
	if got := warmPoints(m, 2*Warm, 10); got != nil {
		t.Errorf("a run of 2 s: %+v, want none", got)
	}
	if got := warmPoints(served{latencies: []float64{1}}, 8*time.Second, 10); got != nil {
		t.Errorf("no arrivals: %+v, want none", got)
	}
}

// TestOwnSLO: a tide setting's SLO reaches its setups (the controller's,
// and the idle LS's), and where it is a time the LS's latencies are also
// judged against it; a multiple, no SLO or no latencies, not.
func TestOwnSLO(t *testing.T) {
	tide := []TideSetting{{LS: ctl.Policy{SLO: ctl.SLO{Max: 9 * time.Millisecond}}}, {LS: ctl.Policy{SLO: ctl.SLO{Alone: 2}}}, {}}
	setups := (&Env{}).serveSetups(ServeOptions{Mechanisms: []string{"tide"}, Tide: tide, Idle: true, LSTPCs: 16})
	if len(setups) != 6 || setups[0].slo != tide[0].LS.SLO || setups[1].slo != tide[1].LS.SLO || setups[2].slo != (ctl.SLO{}) || setups[3].slo != tide[0].LS.SLO {
		t.Fatalf("setups %+v", setups)
	}
	lat := []float64{1, 2, 8, 9, 9.5, 20, 3, 4, 5, 6}
	got := ownSLOPoints(setups[0].slo, lat)
	if len(got) != 2 || got[0].Label != "its own SLO" || got[0].Stats.P50 != 9 || got[0].Unit != "" ||
		got[1].Label != "SLO attainment, its own SLO" || got[1].Stats.P50 != 0.8 || got[1].Unit != "fraction" {
		t.Errorf("9 ms: %+v, want 9 ms and 0.8 within it", got)
	}
	for _, s := range setups[1:3] {
		if got := ownSLOPoints(s.slo, lat); got != nil {
			t.Errorf("SLO %q: %+v, want no points", s.slo, got)
		}
	}
	if got := ownSLOPoints(setups[0].slo, nil); got != nil {
		t.Errorf("no latencies: %+v, want no points", got)
	}
}

// contended are a BE's steps' ends (s) beside an LS that is done at 10:
// 1/8 s a step until then (400/s at 50 a step, half its 800/s alone), and
// after it steps of then (1/16 s: back at its rate alone) until 11.5.
func contended(then float64) []float64 {
	var ends []float64
	for t := 9.0; t <= 10; t += 0.125 {
		ends = append(ends, t)
	}
	for t := 10 + then; t <= 11.5; t += then {
		ends = append(ends, t)
	}
	return ends
}

// TestRecovery: the BE's rate after the LS's last request, over its last
// steps spanning RecoveryWindow or more, reaches RecoveryShare of its rate
// alone at a known step; never, and how long it was seen then; or cannot
// be judged from too few steps.
func TestRecovery(t *testing.T) {
	// at 10 1/16: 3 steps since 9.75 (480/s), at 10 1/8: 3 since 9 7/8
	// (600/s), at 10 3/16: 4 since 9 7/8 (640/s), at 10 1/4: 4 since 10
	// (800/s, at least 720)
	if d, ok := Recovery(contended(0.0625), 10, 50, 800); !ok || d != 0.25 {
		t.Errorf("back at its rate alone from 10: %g, %v; want 0.25 s", d, ok)
	}
	// still at half its rate alone: not within the 1.5 s seen
	if d, ok := Recovery(contended(0.125), 10, 50, 800); ok || d != 1.5 {
		t.Errorf("never back: %g, %v; want not within 1.5 s", d, ok)
	}
	// a step longer than the window: its rate is that one step's
	if d, ok := Recovery([]float64{9, 9.5, 10.25, 10.5}, 10, 50, 110); !ok || d != 0.5 {
		t.Errorf("half-second steps: %g, %v; want 0.5 s (one step in 1/4 s, 200/s)", d, ok)
	}
	for _, ends := range [][]float64{nil, {9, 9.5}, {10.1}, {10.1, 10.2}} {
		if d, ok := Recovery(ends, 10, 50, 800); ok || !math.IsNaN(d) {
			t.Errorf("ends %v: %g, %v; want too few to judge", ends, d, ok)
		}
	}
}

// TestRecoveryPoints: a run's BE recovery is judged from the LS's last
// request's completion on the clock both programs share (its start, plus
// the latest arrival and latency), and becomes a point; a run without LS
// requests, without its start, or without the BE's rate alone has none.
func TestRecoveryPoints(t *testing.T) {
	ends := contended(0.0625)
	for i := range ends {
		ends[i] += 100
	}
	m := served{lsStart: 100, arrivals: []float64{0.5, 9.875}, latencies: []float64{5, 125}, beEnds: ends}
	// after it, 25 rates from 400/s (the window's first steps at half
	// speed) to 800/s: as fractions of alone
	tail := func(p report.Point, max float64) bool {
		return p.Label == "BE rate after the LS's last request" && p.Unit == "fraction of alone" &&
			p.Stats.N == 25 && p.Stats.Max == max && p.Stats.Min == 0.5*max
	}
	if got := recoveryPoints(m, 50, 800); len(got) != 2 || got[0].Label != "BE recovery" || got[0].Unit != "s" || got[0].Stats.P50 != 0.25 || !tail(got[1], 1) {
		t.Errorf("recovered: %+v, want BE recovery 0.25 s and its rate after at 0.5-1 of alone", got)
	}
	if got := recoveryPoints(m, 50, 1000); len(got) != 2 || got[0].Label != "BE recovery, not within" || got[0].Stats.P50 != 1.5 || !tail(got[1], 0.8) {
		t.Errorf("not recovered: %+v, want not within 1.5 s and its rate after at 0.4-0.8 of alone", got)
	}
	idle, old := m, m
	idle.arrivals, idle.latencies = nil, nil
	old.lsStart = 0
	for name, m := range map[string]served{"no request": idle, "no start": old} {
		if got := recoveryPoints(m, 50, 800); got != nil {
			t.Errorf("%s: %+v, want none", name, got)
		}
	}
	if got := recoveryPoints(m, 50, 0); got != nil {
		t.Errorf("no rate alone: %+v, want none", got)
	}
}
