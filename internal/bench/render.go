// Showing a benchmark's result again: each benchmark's table and plots by
// its name, and Save, which writes a result's JSON and plots.

package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// Plot draws r's plots into dir (DIR/BENCHMARK.png and .svg), all or
// none: they are drawn into a temporary directory in dir and moved into
// place once every one is written. A result they cannot be drawn from (no
// points, a value a log scale cannot show) is an error saying so, and
// leaves no file behind.
func Plot(r *report.Result, dir string) error {
	rd, ok := renderers[r.Benchmark]
	if !ok {
		return fmt.Errorf("no plot for benchmark %q", r.Benchmark)
	}
	if !hasPoints(r) {
		return fmt.Errorf("cannot plot the %s result: it has no points", r.Benchmark)
	}
	tmp, err := os.MkdirTemp(dir, "."+r.Benchmark+"-plots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := drawn(r.Benchmark, "plot", func() error { return rd.plot(r, tmp) }); err != nil {
		return err
	}
	files, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Rename(filepath.Join(tmp, f.Name()), filepath.Join(dir, f.Name())); err != nil {
			return err
		}
	}
	return nil
}

// hasPoints says whether any series of r has a point.
func hasPoints(r *report.Result) bool {
	for _, s := range r.Series {
		if len(s.Points) > 0 {
			return true
		}
	}
	return false
}

// drawn runs draw, making a panic of the plotting library (it panics on
// what it cannot draw, such as a value of 0 on a log scale) an error that
// says which result could not be drawn.
func drawn(benchmark, what string, draw func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot %s the %s result: %v", what, benchmark, p)
		}
	}()
	return draw()
}

// WriteTable prints r as the table its benchmark command prints, so that a
// saved result can be read again without a GPU; all of it or, where r
// cannot be shown, nothing.
func WriteTable(w io.Writer, r *report.Result) error {
	rd, ok := renderers[r.Benchmark]
	if !ok {
		return fmt.Errorf("no table for benchmark %q", r.Benchmark)
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s on %s, driver %s, %s\n", r.Benchmark, r.Device, r.Driver, r.Date)
	if err := drawn(r.Benchmark, "tabulate", func() error { rd.table(tw, r); return tw.Flush() }); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Save writes r's JSON and plots into dir and returns the JSON's path.
func Save(r *report.Result, dir string) (string, error) {
	path, err := r.Save(dir)
	if err != nil {
		return "", err
	}
	return path, Plot(r, dir)
}
