package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
)

// TestRunServe drives the run protocol with stand-ins for the LS service
// and the BE job: both get ready, both are told to go, both report.
func TestRunServe(t *testing.T) {
	dir := t.TempDir()
	ls := filepath.Join(dir, "ls")
	os.WriteFile(ls, []byte("#!/bin/sh\necho ready; read go; echo '{\"latencies_ms\": [1.5, 2.5, 9], \"requests\": 3}'\n"), 0o755)
	be := filepath.Join(dir, "be")
	os.WriteFile(be, []byte("#!/bin/sh\necho ready; read go; echo '{\"items\": 640, \"unit\": \"images\", \"seconds\": 2, \"info\": {\"params\": 25e6}}'\n"), 0o755)
	w := Workers{}
	m, err := w.runServe(setup{withLS: true, withBE: true}, []string{ls}, []string{be}, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.latencies) != 3 || m.requests != 3 || m.items != 640 || m.unit != "images" || m.seconds != 2 || m.beInfo["params"] != 25e6 {
		t.Errorf("served %+v", m)
	}
	// a program that never reports is stopped, not waited on for good
	hung := filepath.Join(dir, "hung")
	os.WriteFile(hung, []byte("#!/bin/sh\necho ready; read go; echo $$ >"+filepath.Join(dir, "hung.pid")+"; exec sleep 60\n"), 0o755)
	defer func(g time.Duration) { serveGrace = g }(serveGrace)
	serveGrace = 300 * time.Millisecond
	start := time.Now()
	if _, err := w.runServe(setup{withBE: true}, nil, []string{hung}, 0, time.Second); err == nil || !strings.Contains(err.Error(), "no result within") {
		t.Errorf("a program that never reports: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopping it took %v", d)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hung.pid")); err != nil {
		t.Error(err)
	} else if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("the program that never reported (pid %d) still runs", pid)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("#!/bin/sh\necho loading; exit 1\n"), 0o755)
	if _, err := w.runServe(setup{withBE: true}, nil, []string{bad}, 0, 1); err == nil || !strings.Contains(err.Error(), "did not get ready") {
		t.Errorf("a program that never gets ready: %v", err)
	}
}

// TestRunServeOrders: LS first, the LS is ready before the BE starts and
// both are told to go then; BE first, the BE starts and goes, the LS
// starts while it runs, and the BE is measured from the LS's go to its
// result, its start-up left out.
func TestRunServeOrders(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	// the LS waits (up to 5 s) for the BE to have gone, if it is to, so the
	// log's order does not hang on how fast the BE reads its go
	ls := filepath.Join(dir, "ls")
	os.WriteFile(ls, []byte(`#!/bin/sh
for i in $(seq 50); do grep -q "be go" `+log+` 2>/dev/null && break; [ -n "$BE_FIRST" ] || break; sleep 0.1; done
echo "ls start" >>`+log+`
sleep 1 # its warm-up and graph capture, outside the BE's window
echo "ls ready" >>`+log+`
echo ready; read go; echo "ls go" >>`+log+`
sleep 0.5 # serving
echo "ls done" >>`+log+`
echo '{"latencies_ms": [1, 2], "requests": 2}'
`), 0o755)
	be := filepath.Join(dir, "be")
	os.WriteFile(be, []byte(`#!/bin/sh
echo "be start $*" >>`+log+`
echo ready; read go; echo "be go" >>`+log+`
if [ "$1" != --marks ]; then echo '{"items": 640, "seconds": 8}'; exit; fi
read start; t0=$(date +%s%N); echo "be window start" >>`+log+`
read stop; t1=$(date +%s%N); echo "be window end" >>`+log+`
echo "{\"items\": 64, \"seconds\": $(( (t1 - t0) / 1000000 ))e-3}"
`), 0o755)
	events := func() []string {
		b, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	before := func(ev []string, a, b string) bool {
		i, j := slices.Index(ev, a), slices.Index(ev, b)
		return i >= 0 && j >= 0 && i < j
	}
	w := Workers{}
	m, err := w.runServe(setup{withLS: true, withBE: true}, []string{ls}, []string{be}, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev := events()
	if !before(ev, "ls ready", "be start ") || !before(ev, "be start ", "ls go") || !before(ev, "be start ", "be go") || m.items != 640 || m.seconds != 8 {
		t.Errorf("LS first: %q, served %+v", ev, m)
	}
	t.Setenv("BE_FIRST", "1")
	m, err = w.runServe(setup{withLS: true, withBE: true, beFirst: true}, []string{ls}, []string{be}, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev = events()
	for _, o := range [][2]string{{"be start --marks", "be go"}, {"be go", "ls start"}, {"ls ready", "ls go"}, {"ls ready", "be window start"},
		{"ls done", "be window end"}} {
		if !before(ev, o[0], o[1]) {
			t.Errorf("BE first: %q before %q? %q", o[0], o[1], ev)
		}
	}
	if len(m.latencies) != 2 || m.items != 64 || m.seconds < 0.45 || m.seconds > 1.2 {
		t.Errorf("BE first: served %+v, want the BE over the LS's 0.5 s of serving, not its 1 s start", m)
	}
	// an order asks for both programs: one alone runs as it always did
	m, err = w.runServe(setup{withBE: true, beFirst: true}, nil, []string{be}, 0, time.Second)
	if err != nil || m.items != 640 {
		t.Errorf("BE alone, BE first: %+v %v", m, err)
	}
}

func TestInOrders(t *testing.T) {
	s := []setup{{name: "MPS", withLS: true, withBE: true}, {name: "carve tide, x", withLS: true, withBE: true}}
	var got []string
	for _, x := range inOrders(s, []string{"be-first", "ls-first"}) {
		got = append(got, fmt.Sprintf("%s/%v", x.name, x.beFirst))
	}
	want := []string{"MPS (BE first)/true", "MPS/false", "carve tide, x (BE first)/true", "carve tide, x/false"}
	if !slices.Equal(got, want) {
		t.Errorf("setups in orders: %q, want %q", got, want)
	}
	if got := inOrders(s, nil); len(got) != 2 || got[0].beFirst || got[1].name != "carve tide, x" {
		t.Errorf("no order: %+v, want LS first, as before", got)
	}
}

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

func TestServeRender(t *testing.T) {
	pt := func(label string, st stats.Stats) report.Point { return report.Point{Label: label, Stats: st} }
	series := func(mech string, lat []float64, be float64, attain float64) report.Series {
		s := report.Series{Mechanism: mech, Victim: "resnet50:graph", Competitor: "densenet161", Measured: true}
		if lat != nil {
			s.Points = append(s.Points, pt("LS latency @400/s", stats.Summarize(lat)), pt("LS p99.9", one(lat[len(lat)-1])))
			if !math.IsNaN(attain) {
				s.Points = append(s.Points, pt("SLO attainment", one(attain)))
			}
		}
		if be > 0 {
			s.Points = append(s.Points, report.Point{Label: "BE throughput", Unit: "img/s", Stats: one(be)})
		}
		return s
	}
	r := &report.Result{Benchmark: "serve", Device: "test GPU", Params: map[string]any{"slo_ms": map[string]any{"resnet50:graph @400/s": 4.0}},
		Series: []report.Series{
			series("BE alone, whole GPU", nil, 1000, math.NaN()),
			series("LS alone, whole GPU", []float64{1, 1.2, 2}, 0, 1),
			series("MPS 25%/75%", []float64{2, 3, 12}, 900, 0.67),
			series("carve tide, 8 in flight, 300µs queued, share 0.05", []float64{1.1, 1.3, 2.5}, 700, 1),
			series("carve tide, 8 in flight, 300µs queued, share 0.05 (BE first)", []float64{1.2, 1.5, 3.5}, 650, 0.99),
		}}
	// a language-model pair, its BE in sequences/s, and the models as the
	// programs described them
	llm := func(mech string, lat []float64, be float64) report.Series {
		s := series(mech, lat, be, math.NaN())
		s.Victim, s.Competitor = "llm:graph", "transformer-train"
		if lat != nil {
			s.Points[0].Label = "LS latency @50/s"
		}
		if be > 0 {
			s.Points[len(s.Points)-1].Unit = "seq/s"
		}
		return s
	}
	r.Series = append(r.Series, llm("BE alone, whole GPU", nil, 120), llm("LS alone, whole GPU", []float64{7, 7.5, 9}, 0),
		llm("carve tide, 8 in flight, 300µs queued, share 0.05", []float64{8, 9, 12}, 90))
	r.Params["models"] = map[string]any{"llm:graph": map[string]any{"params": 439.4e6, "prompt_tokens": 32.0, "new_tokens": 16.0},
		"transformer-train": map[string]any{"params": 218e6, "seq": 256.0, "batch": 64.0}}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MPS 25%/75%", "67.00%", "90%", "carve tide, 8 in flight, 300µs queued, share 0.05", "4.00", "1.25x",
		"share 0.05 (BE first)", "65%", "its throughput is over the LS's serving only",
		"llm:graph beside transformer-train  50/s", "75%", "BE /S: densenet161 in img/s, transformer-train in seq/s",
		"models: llm:graph 439M parameters, prompt tokens 32, new tokens 16; transformer-train 218M parameters, seq 256, batch 64"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	dir := t.TempDir()
	if err := Plot(r, dir); err != nil {
		t.Fatal(err)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "serve.svg")); err != nil || !bytes.Contains(svg, []byte("carve tide")) || !bytes.Contains(svg, []byte("(BE first)")) ||
		!bytes.Contains(svg, []byte("BE throughput (seq/s)")) || !bytes.Contains(svg, []byte("BE throughput (img/s)")) {
		t.Errorf("plot: %v", err)
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
		{func(o *ServeOptions) { o.BE = []string{"gpt"} }, `BE "gpt": want one of densenet161, resnet50-train, transformer-train`},
		// the new models pass, and the Python must have transformers
		{func(o *ServeOptions) { o.LS = []string{"llm:graph", "llm:eager"} }, "needs torch, torchvision, transformers"},
		{func(o *ServeOptions) { o.BE = []string{"transformer-train"} }, "needs torch, torchvision, transformers"},
		{func(o *ServeOptions) {}, "needs torch, torchvision and"},
		{func(o *ServeOptions) { o.Rates = []float64{0} }, "rate 0"},
		{func(o *ServeOptions) { o.Mechanisms = []string{"mig"} }, `mechanism "mig"`},
		{func(o *ServeOptions) { o.MPSSplits = []int{100} }, "MPS split 100%"},
		{func(o *ServeOptions) { o.StaticSplits = []int{0} }, "static split 0 TPCs"},
		{func(o *ServeOptions) { o.Pattern = "burst" }, `pattern "burst"`},
		{func(o *ServeOptions) { o.Duration = time.Millisecond }, "--duration: 1s to 1h"},
		{func(o *ServeOptions) { o.Duration = 2 * time.Hour }, "--duration: 1s to 1h"},
		{func(o *ServeOptions) { o.Orders = []string{"ls-first", "lsfirst"} }, `order "lsfirst": want ls-first or be-first`},
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
