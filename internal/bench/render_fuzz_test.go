// The results 'carve bench report' reads are files anyone may hand it:
// every benchmark's table and plots are drawn from minimal and odd results
// without a panic, and a result that cannot be plotted is an error that
// leaves no plot behind (TestReportOfMinimalResults, FuzzReport).

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/report"
)

// minimalResults are JSON results of each benchmark that carve can show,
// from the least a result may hold (a benchmark name) to series of empty,
// zero, negative and odd points and params of the wrong types.
func minimalResults() []string {
	bodies := []string{
		`{"benchmark":%q}`,
		`{"benchmark":%q,"series":[]}`,
		`{"benchmark":%q,"series":[{"mechanism":"m","measured":true}]}`,
		`{"benchmark":%q,"series":[{"mechanism":"m","measured":true,"points":[{}]}]}`,
		`{"benchmark":%q,"series":[{"mechanism":"m","measured":false,"points":[{}]}]}`,
		`{"benchmark":%q,"series":[{"mechanism":"m","measured":true,"points":[{"ms":{"p50":-1,"min":-2,"max":-0.5}}]}]}`,
		`{"benchmark":%q,"series":[{"mechanism":"a","measured":true,"points":[{"label":"x","ms":{"p50":1}},{"label":"y","ms":{"p50":2}}]},` +
			`{"mechanism":"b","measured":true,"points":[{"label":"x","ms":{"p50":1}}]}]}`,
		`{"benchmark":%q,"params":{"baseline":"m","slo_ms":{"x":"y"},"models":{"a":1},"scaled_alone_ms":{"a":"b"},"share":1,"over_half_capacity":[1],"failed":[{}]},` +
			`"series":[{"mechanism":"m","victim":"x","competitor":"c","measured":true,"points":[{"label":"a","sms":-4,"tpcs":-2,"ms":{"p50":1e300,"p99":1e308,"n":-1}}]}]}`,
	}
	var out []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range renderers {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, b := range bodies {
			out = append(out, fmt.Sprintf(b, k))
		}
	}
	return out
}

// checkReport reads data as 'carve bench report' would and draws its table
// and plots: neither may panic, and a plot that fails leaves no file.
func checkReport(t *testing.T, data []byte) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := report.Load(path)
	if err != nil {
		return
	}
	var table strings.Builder
	terr := WriteTable(&table, r)
	if terr != nil && table.Len() > 0 {
		t.Errorf("%s: the table failed (%v) but printed %q", data, terr, table.String())
	}
	perr := Plot(r, dir)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	want := []string{"result.json"}
	if perr == nil {
		want = []string{r.Benchmark + ".png", r.Benchmark + ".svg", "result.json"}
		slices.Sort(want)
	} else if !strings.Contains(perr.Error(), r.Benchmark) && !strings.Contains(perr.Error(), strconv.Quote(r.Benchmark)) {
		t.Errorf("%s: the plot's error %q does not name the benchmark", data, perr)
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s: plot (%v) left %v, want %v", data, perr, names, want)
	}
}

// TestReportOfMinimalResults: every benchmark's minimal results are shown
// or refused, never a panic, and a refused plot leaves no file.
func TestReportOfMinimalResults(t *testing.T) {
	for _, data := range minimalResults() {
		checkReport(t, []byte(data))
	}
	dir := t.TempDir()
	err := Plot(&report.Result{Benchmark: "granularity"}, dir)
	if err == nil || !strings.Contains(err.Error(), "cannot plot the granularity result: it has no points") {
		t.Errorf("plot of a granularity result without points: %v", err)
	}
}

// FuzzReport: any file is shown or refused as above.
func FuzzReport(f *testing.F) {
	for _, data := range minimalResults() {
		f.Add([]byte(data))
	}
	// one recorded result of each benchmark (results/, the repository's)
	saved, _ := filepath.Glob("../../results/*/bench/*/*.json")
	more, _ := filepath.Glob("../../results/*/memmap/*/*.json")
	seen := map[string]bool{}
	for _, p := range append(saved, more...) {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 && !seen[filepath.Base(p)] {
			seen[filepath.Base(p)] = true
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkReport(t, data) })
}
