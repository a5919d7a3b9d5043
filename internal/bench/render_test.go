// Tests of render.go: a result saved, loaded and drawn again, each
// benchmark's plots from a small result, and isolation's variations.

package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/workload"
)

func TestSaveAndPlot(t *testing.T) {
	dir := t.TempDir()
	r := &report.Result{Benchmark: "granularity", Device: "test GPU", Series: []report.Series{
		{Mechanism: "carve", Measured: true, Points: []report.Point{{TPCs: 1, SMs: 2, Stats: stats.Summarize([]float64{40, 41})}, {TPCs: 2, SMs: 4, Stats: stats.Summarize([]float64{20})}}},
		MIGSeries(),
	}}
	p, err := r.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := report.Load(p)
	if err != nil || back.Series[0].Points[0].Stats.P50 != 40.5 || back.Series[1].Measured {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if err := Plot(back, dir); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "granularity.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("png: %v", err)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "granularity.svg")); err != nil || !bytes.Contains(svg, []byte("carve")) {
		t.Fatalf("svg: %v", err)
	}
}

func TestPlotUnknown(t *testing.T) {
	if err := Plot(&report.Result{Benchmark: "nope"}, t.TempDir()); err == nil {
		t.Error("plot of an unknown benchmark succeeded")
	}
	if _, err := report.Load("/nonexistent.json"); err == nil {
		t.Error("load of a missing file succeeded")
	}
}

// TestPlots draws each benchmark's plot from a small result and checks
// that a PNG and an SVG naming the series come out.
func TestPlots(t *testing.T) {
	st := func(xs ...float64) stats.Stats { return stats.Summarize(xs) }
	suite := func(mech, comp string, scale float64) report.Series {
		s := report.Series{Mechanism: mech, Competitor: comp, Measured: true}
		for i, app := range workload.SuiteApps {
			s.Points = append(s.Points, report.Point{Label: app, Stats: st(scale * float64(i+1))})
		}
		return s
	}
	for _, r := range []*report.Result{
		{Benchmark: "enforcement", Params: map[string]any{"scaled_alone_ms": map[string]any{"sgemm": 1.5}},
			Series: []report.Series{
				{Mechanism: "alone, whole GPU", Victim: "sgemm", Measured: true, Points: []report.Point{{Stats: st(0.8, 0.9, 1)}}},
				{Mechanism: "carve + memory", Victim: "sgemm", Measured: true, Points: []report.Point{{Stats: st(1.4, 1.5, 2.5)}}},
				{Mechanism: "carve + memory", Victim: "torch.matmul", Measured: true, Points: []report.Point{{Stats: st(1.4, 1.5, 2.5)}}},
			}},
		{Benchmark: "isolation", Params: map[string]any{"baseline": "none"},
			Series: []report.Series{suite("none", "", 1), suite("none", "va", 2), suite("carve", "", 2), suite("carve", "fwt", 2.1)}},
		{Benchmark: "overhead", Series: []report.Series{
			{Mechanism: "none", Measured: true, Points: []report.Point{{Label: "launch latency", Unit: "us", Stats: st(4, 5)}, {Label: "startup", Stats: st(300)}}},
			{Mechanism: "carve", Measured: true, Points: []report.Point{{Label: "launch latency", Unit: "us", Stats: st(4, 6)}, {Label: "startup", Stats: st(310)}}},
		}},
	} {
		t.Run(r.Benchmark, func(t *testing.T) {
			dir := t.TempDir()
			r.Device = "test GPU"
			if err := Plot(r, dir); err != nil {
				t.Fatal(err)
			}
			if png, err := os.ReadFile(filepath.Join(dir, r.Benchmark+".png")); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
				t.Fatalf("png: %v", err)
			}
			if svg, err := os.ReadFile(filepath.Join(dir, r.Benchmark+".svg")); err != nil || !bytes.Contains(svg, []byte(r.Series[1].Mechanism)) {
				t.Fatalf("svg without %q: %v", r.Series[1].Mechanism, err)
			}
		})
	}
	if err := Plot(&report.Result{Benchmark: "isolation", Params: map[string]any{"baseline": "gone"}}, t.TempDir()); err == nil {
		t.Error("isolation plot without its baseline succeeded")
	}
}

func TestVariations(t *testing.T) {
	pt := func(app string, mean float64) report.Point {
		return report.Point{Label: app, Stats: stats.Summarize([]float64{mean})}
	}
	r := &report.Result{Series: []report.Series{
		{Mechanism: "carve", Points: []report.Point{pt("mm", 10), pt("va", 4)}},
		{Mechanism: "carve", Competitor: "mm", Points: []report.Point{pt("mm", 10.5), pt("va", 4)}},
		{Mechanism: "carve", Competitor: "va", Points: []report.Point{pt("mm", 11), pt("va", 6)}},
		{Mechanism: "MPS", Points: []report.Point{pt("mm", 8)}},
		{Mechanism: "MPS", Competitor: "va", Points: []report.Point{pt("mm", 16)}},
		{Mechanism: "lonely", Points: []report.Point{pt("mm", 8)}}, // no interferer: no row
	}}
	rows := Variations(r)
	if len(rows) != 2 || rows[0].Mechanism != "carve" || rows[1].Mechanism != "MPS" {
		t.Fatalf("rows %+v", rows)
	}
	near := func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
	if c := rows[0]; !near(c.PerApp["mm"], 0.1) || !near(c.PerApp["va"], 0.5) || !near(c.Avg, 0.3) || !near(c.Max, 0.5) {
		t.Errorf("carve row %+v, want mm 0.1, va 0.5, avg 0.3, max 0.5", c)
	}
	if b := rows[0].ByInterferer; len(b) != 2 || !near(b["mm"], 0.025) || !near(b["va"], 0.3) {
		t.Errorf("carve by interferer %v, want mm 0.025 (mean of 0.05 and 0), va 0.3 (of 0.1 and 0.5)", b)
	}
	if m := rows[1]; !near(m.Avg, 1) || !near(m.Max, 1) {
		t.Errorf("MPS row %+v, want 1 and 1", m)
	}
}
