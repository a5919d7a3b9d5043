// Showing a benchmark's result again: each benchmark's table and plots by
// its name, and Save, which writes a result's JSON and plots.

package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/carve-gpu/carve/internal/report"
)

// renderer draws one benchmark's result: its table and its plots.
type renderer struct {
	table func(io.Writer, *report.Result)
	plot  func(*report.Result, string) error
}

// renderers are the benchmarks whose results carve can show again.
var renderers = map[string]renderer{
	"granularity": {granularityTable, plotGranularity},
	"enforcement": {enforcementTable, plotEnforcement},
	"colour":      {enforcementTable, plotEnforcement},
	"overhead":    {overheadTable, plotOverhead},
	"isolation":   {isolationTable, plotIsolation},
	"readers":     {readersTable, plotReaders},
	"serve":       {serveTable, plotServe},
}

// Plot draws r's plots into dir (DIR/BENCHMARK.png and .svg).
func Plot(r *report.Result, dir string) error {
	rd, ok := renderers[r.Benchmark]
	if !ok {
		return fmt.Errorf("no plot for benchmark %q", r.Benchmark)
	}
	return rd.plot(r, dir)
}

// WriteTable prints r as the table its benchmark command prints, so that a
// saved result can be read again without a GPU.
func WriteTable(w io.Writer, r *report.Result) error {
	rd, ok := renderers[r.Benchmark]
	if !ok {
		return fmt.Errorf("no table for benchmark %q", r.Benchmark)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s on %s, driver %s, %s\n", r.Benchmark, r.Device, r.Driver, r.Date)
	rd.table(tw, r)
	return tw.Flush()
}

// Save writes r's JSON and plots into dir and returns the JSON's path.
func Save(r *report.Result, dir string) (string, error) {
	path, err := r.Save(dir)
	if err != nil {
		return "", err
	}
	return path, Plot(r, dir)
}
