package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSaveAndPlot(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Benchmark: "granularity", Device: "test GPU", Series: []Series{
		{Mechanism: "carve", Measured: true, Points: []Point{{TPCs: 1, SMs: 2, Stats: Summarize([]float64{40, 41})}, {TPCs: 2, SMs: 4, Stats: Summarize([]float64{20})}}},
		MIGSeries(),
	}}
	p, err := r.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(p)
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

func TestMulCPUAndRelErr(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	b := []float32{5, 6, 7, 8}
	want := []float64{19, 22, 43, 50}
	got := MulCPU(2, a, b)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MulCPU = %v", got)
		}
	}
	if e := RelErr([]float32{19, 22, 43, 50}, want); e != 0 {
		t.Errorf("exact: %g", e)
	}
	if e := RelErr([]float32{19, 22, 43, 51}, want); e < 1e-3 {
		t.Errorf("off by one: %g", e)
	}
	nan := float32(0)
	nan = nan / nan
	if e := RelErr([]float32{nan, 22, 43, 50}, want); e < 1 {
		t.Errorf("NaN passes: %g", e)
	}
}

func TestPlotUnknown(t *testing.T) {
	if err := Plot(&Result{Benchmark: "nope"}, t.TempDir()); err == nil {
		t.Error("plot of an unknown benchmark succeeded")
	}
	if _, err := Load("/nonexistent.json"); err == nil {
		t.Error("load of a missing file succeeded")
	}
}

func TestPlotEnforcement(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Benchmark: "enforcement", Device: "test GPU", Params: map[string]any{"scaled_alone_ms": 1.5},
		Series: []Series{
			{Mechanism: "alone, whole GPU", Measured: true, Points: []Point{{Stats: Summarize([]float64{0.8, 0.9, 1})}}},
			{Mechanism: "carve + memory", Measured: true, Points: []Point{{Stats: Summarize([]float64{1.4, 1.5, 2.5})}}},
		}}
	if err := Plot(r, dir); err != nil {
		t.Fatal(err)
	}
	if png, err := os.ReadFile(filepath.Join(dir, "enforcement.png")); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("png: %v", err)
	}
}
