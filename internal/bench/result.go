package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Point is one partition size of one mechanism.
type Point struct {
	Label string `json:"label,omitempty"` // what was measured, where a series has several
	Unit  string `json:"unit,omitempty"`  // of Stats where it is not ms
	TPCs  int    `json:"tpcs,omitempty"`
	SMs   int    `json:"sms,omitempty"`
	Stats Stats  `json:"ms"`
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

// MIGSliceSMs are the H100's MIG instance sizes in SMs (1g..4g and 7g), as
// NVIDIA documents them; MIG cannot be enabled on the lent GPU.
var MIGSliceSMs = []int{16, 32, 48, 64, 112}

// Save writes r as DIR/NAME.json.
func (r *Result) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, r.Benchmark+".json")
	return p, os.WriteFile(p, b, 0o644)
}

// Load reads a result saved by Save.
func Load(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Plot draws r's plots into dir, by benchmark.
func Plot(r *Result, dir string) error {
	switch r.Benchmark {
	case "granularity":
		return PlotGranularity(r, dir)
	case "enforcement", "colour":
		return PlotEnforcement(r, dir)
	case "isolation":
		return PlotIsolation(r, dir)
	case "overhead":
		return PlotOverhead(r, dir)
	case "readers":
		return PlotReaders(r, dir)
	}
	return fmt.Errorf("no plot for benchmark %q", r.Benchmark)
}
