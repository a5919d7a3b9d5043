// Tests of carve bench report.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
)

// TestBenchReport reads a saved result back: its table on stdout, its plots
// drawn again beside it.
func TestBenchReport(t *testing.T) {
	sandbox(t)
	dir := t.TempDir()
	r := &report.Result{Benchmark: "enforcement", Device: "test GPU", Driver: "1.2.3",
		Params: map[string]any{"share": 0.5, "scaled_alone_ms": map[string]any{"sgemm": 2.0}},
		Series: []report.Series{{Mechanism: "carve 33/33 TPCs + memory", Victim: "sgemm", Measured: true,
			Points: []report.Point{{Stats: stats.Summarize([]float64{2, 2.1, 2.2})}}}}}
	path, err := r.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := carve(t, "bench", "report", path)
	if err != nil {
		t.Fatal(err)
	}
	// p99 of 2, 2.1, 2.2 is 2.198: +9.9% over the 2.0 ms reference
	for _, want := range []string{"carve 33/33 TPCs + memory", "+9.9%", "driver 1.2.3"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, ext := range []string{"png", "svg"} {
		if _, err := os.Stat(filepath.Join(dir, "enforcement."+ext)); err != nil {
			t.Error(err)
		}
	}
}
