// Package report holds what every experiment of carve writes: a result
// (series of points with their statistics) saved as JSON, and the pieces
// its tables and plots are drawn with (gonum/plot, PNG and SVG). It knows
// no experiment: each experiment in internal/bench draws its own result
// with these pieces.
package report

import (
	"github.com/carve-gpu/carve/internal/jsonfile"
	"github.com/carve-gpu/carve/internal/stats"
)

// Point is one partition size of one mechanism.
type Point struct {
	Label string      `json:"label,omitempty"` // what was measured, where a series has several
	Unit  string      `json:"unit,omitempty"`  // of Stats where it is not ms
	TPCs  int         `json:"tpcs,omitempty"`
	SMs   int         `json:"sms,omitempty"`
	Stats stats.Stats `json:"ms"`
}

// Series is one mechanism's points. Documented series (MiG here) come from
// vendor documentation, not from a run, and are drawn as such.
type Series struct {
	Mechanism  string  `json:"mechanism"`
	Victim     string  `json:"victim,omitempty"`     // the measured program, where there are several
	Competitor string  `json:"competitor,omitempty"` // what ran beside it; "" for nothing
	Measured   bool    `json:"measured"`
	Note       string  `json:"note,omitempty"`
	Points     []Point `json:"points"`
}

// Result is one benchmark run, as written to NAME.json.
type Result struct {
	Benchmark string         `json:"benchmark"`
	Device    string         `json:"device"`
	UUID      string         `json:"uuid"`
	Driver    string         `json:"driver"`
	Date      string         `json:"date"`
	Params    map[string]any `json:"params"`
	Series    []Series       `json:"series"`
}

// Save writes r as DIR/NAME.json.
func (r *Result) Save(dir string) (string, error) { return jsonfile.Save(dir, r.Benchmark+".json", r) }

// Load reads a result saved by Save.
func Load(path string) (*Result, error) {
	var r Result
	if err := jsonfile.Load(path, ResultKind, &r); err != nil {
		return nil, err
	}
	if r.Benchmark == "" {
		return nil, ResultKind.Not(path, "no benchmark name")
	}
	return &r, nil
}

// ResultKind is the kind of file Save writes.
var ResultKind = jsonfile.Kind{What: "a carve benchmark result",
	Want: "the BENCHMARK.json that 'carve bench BENCHMARK --out DIR' writes into DIR"}
