// Tests of the serve benchmark's table and plot (serve_table.go).

package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
)

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

// TestServeBusyPeriods: an LS tenant's busy periods, read from its block's
// histogram, go into the result as their count and quantiles in ms, and
// the table's BUSY P99 shows their p99 where a setup has them, "-" where
// it has none.
func TestServeBusyPeriods(t *testing.T) {
	var h ctl.Hist
	for i := 0; i < 98; i++ {
		h.Counts[40]++ // ctl.HistBound(40) is 1.024 ms: periods in [0.896, 1.024) ms
	}
	h.Counts[60] += 2 // [28.7, 32.8) ms
	h.Sum = 98*time.Millisecond + 60*time.Millisecond
	st := periodStats(h)
	if st.N != 100 || st.P50 < 0.896 || st.P50 > 1.024 || st.P99 < 28.6 || st.P99 > 32.8 || math.Abs(st.Mean-1.58) > 1e-9 {
		t.Fatalf("periodStats = %+v", st)
	}
	lat := stats.Summarize([]float64{1, 2, 3})
	with := report.Series{Mechanism: "carve tide, slo 2x", Victim: "ls", Competitor: "be", Measured: true,
		Points: []report.Point{{Label: "LS latency @400/s", Stats: lat}, {Label: "LS busy periods", Stats: st}}}
	without := report.Series{Mechanism: "MPS", Victim: "ls", Competitor: "be", Measured: true,
		Points: []report.Point{{Label: "LS latency @400/s", Stats: lat}}}
	var b bytes.Buffer
	if err := WriteTable(&b, &report.Result{Benchmark: "serve", Series: []report.Series{with, without}}); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(b.String(), "\n")[1:] // under the device line
	if !strings.Contains(rows[0], "BUSY P99") {
		t.Fatalf("no BUSY P99 column:\n%s", b.String())
	}
	col := strings.Index(rows[0], "BUSY P99")
	if got := strings.Fields(rows[1][col:])[0]; got != fmt.Sprintf("%.2f", st.P99) {
		t.Errorf("tide row's BUSY P99 %q, want %.2f:\n%s", got, st.P99, b.String())
	}
	if got := strings.Fields(rows[2][col:])[0]; got != "-" {
		t.Errorf("MPS row's BUSY P99 %q, want -:\n%s", got, b.String())
	}
}

// TestServeOwnSLOAndRecovery: a row whose tide setting has a time SLO
// shows its attainment of it, each row its BE's recovery after the LS's
// last request (where it did not recover, with the most of its rate alone
// it reached) and its warm attainment, each in a column of its own with
// a line saying what it is; a result without them (as saved before them)
// shows none.
func TestServeOwnSLOAndRecovery(t *testing.T) {
	lat := report.Point{Label: "LS latency @400/s", Stats: stats.Summarize([]float64{1, 2, 3})}
	be := report.Point{Label: "BE throughput", Unit: "img/s", Stats: one(700)}
	tide := report.Series{Mechanism: "carve tide, 8 in flight, SLO 9ms", Victim: "ls", Competitor: "be", Measured: true,
		Points: []report.Point{lat, {Label: "SLO attainment", Unit: "fraction", Stats: one(0.95)}, {Label: "SLO attainment, warm", Unit: "fraction", Stats: one(0.998)},
			{Label: "its own SLO", Stats: one(9)}, {Label: "SLO attainment, its own SLO", Unit: "fraction", Stats: one(0.991)},
			be, {Label: "BE recovery", Unit: "s", Stats: one(0.24)}}}
	mps := report.Series{Mechanism: "MPS 50%/50%", Victim: "ls", Competitor: "be", Measured: true,
		Points: []report.Point{lat, be, {Label: "BE recovery, not within", Unit: "s", Stats: one(1.52)}}}
	plain := report.Series{Mechanism: "MPS", Victim: "ls", Competitor: "be", Measured: true, Points: []report.Point{lat, be}}
	// with the BE's rates after the LS's last request: the most of them
	tail := report.Series{Mechanism: "MPS 75%/25%", Victim: "ls", Competitor: "be", Measured: true,
		Points: []report.Point{lat, be, {Label: "BE recovery, not within", Unit: "s", Stats: one(1.53)},
			{Label: "BE rate after the LS's last request", Unit: "fraction of alone", Stats: stats.Summarize([]float64{0.41, 0.862, 0.7})}}}
	var b bytes.Buffer
	if err := WriteTable(&b, &report.Result{Benchmark: "serve", Series: []report.Series{tide, mps, plain, tail}}); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(b.String(), "\n")[1:] // under the device line
	cell := func(row int, head string) string {
		col := strings.Index(rows[0], head)
		if col < 0 {
			t.Fatalf("no %s column:\n%s", head, b.String())
		}
		c, _, _ := strings.Cut(rows[row][col:], "  ")
		return c
	}
	for _, c := range []struct {
		row        int
		head, want string
	}{
		{1, "OWN SLO MET", "99.10% (9.00)"}, {2, "OWN SLO MET", "-"}, {3, "OWN SLO MET", "-"},
		{1, "BE RECOVERY", "0.24s"}, {2, "BE RECOVERY", ">1.52s"}, {3, "BE RECOVERY", "-"}, {4, "BE RECOVERY", ">1.53s (86%)"},
		{1, "SLO MET", "95.00%"}, // the 2x-alone rule's, still
		{1, "WARM MET", "99.80%"}, {2, "WARM MET", "-"},
	} {
		if got := cell(c.row, c.head); got != c.want {
			t.Errorf("row %d, %s: %q, want %q:\n%s", c.row, c.head, got, c.want, b.String())
		}
	}
	for _, want := range []string{"OWN SLO MET: under a tide setting whose SLO is a time", "BE RECOVERY: from the LS's last request's completion",
		"WARM MET: of the requests that arrived 1s or more after the LS's start",
		"over its last steps of 200ms or more, first reached 90% of its rate alone"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteTable(&b, &report.Result{Benchmark: "serve", Series: []report.Series{plain}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "OWN SLO") || strings.Contains(b.String(), "RECOVERY") || strings.Contains(b.String(), "WARM") {
		t.Errorf("a result without them shows their columns:\n%s", b.String())
	}
}

// TestSplitCurves: MPS's percentage splits make the curve a plot judges
// the other mechanisms against, one per start order, by BE throughput;
// plain MPS and tide are not on it.
func TestSplitCurves(t *testing.T) {
	pt := func(mech string, be, p99 float64) servePoint {
		return servePoint{mech: mech, be: be, lat: stats.Stats{P99: p99}}
	}
	got := splitCurves([]servePoint{pt("MPS 50%/50%", 5600, 13), pt("MPS 85%/15%", 1700, 7), pt("MPS", 4000, 20),
		pt("MPS 85%/15% (BE first)", 1750, 10), pt("MPS 75%/25%", 3000, 9), pt("carve tide, share 1, SLO 2x", 2800, 6.5)})
	want := [2]string{"[{1700 7} {3000 9} {5600 13}]", "[{1750 10}]"}
	for i := range got {
		if s := fmt.Sprint(got[i]); s != want[i] {
			t.Errorf("curve %d: %s, want %s", i, s, want[i])
		}
	}
}
