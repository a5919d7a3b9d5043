// A kernel's profile on one GPU (its time alone on each partition size and
// its ncu counters), saved and loaded as DIR/KERNEL.json.

package model

import (
	"fmt"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/jsonfile"
	"github.com/carve-gpu/carve/internal/stats"
)

// Size is the kernel alone on one partition size.
type Size struct {
	TPCs  int         `json:"tpcs"`
	SMs   int         `json:"sms"`
	Stats stats.Stats `json:"ms"`
}

// Counters are a kernel's work on the whole GPU, one launch, from ncu.
type Counters struct {
	DRAMBytes    float64 `json:"dram_bytes"`     // dram__bytes.sum
	L2Requests   float64 `json:"l2_requests"`    // lts__t_requests.sum
	Instructions float64 `json:"instructions"`   // smsp__inst_executed.sum (warp instructions)
	DurationNS   float64 `json:"duration_ns"`    // gpu__time_duration.sum, under the profiler
	Tool         string  `json:"tool"`           // the ncu that measured them
	Note         string  `json:"note,omitempty"` //
}

// Profile is one kernel's profile on one GPU.
type Profile struct {
	Kernel string `json:"kernel"`
	Device string `json:"device"`
	UUID   string `json:"uuid"`
	Driver string `json:"driver"`
	Date   string `json:"date"`
	SMs    int    `json:"sms"`  // of the whole GPU
	TPCs   int    `json:"tpcs"` // of the whole GPU
	// NominalBW is the GPU's DRAM bandwidth from its memory clock and bus
	// width, GB/s (double data rate).
	NominalBW float64 `json:"nominal_dram_gbs"`
	Reps      int     `json:"reps"`
	// Program is the command profiled in place of a suite kernel; its
	// times are from start to exit of the whole program.
	Program  []string  `json:"program,omitempty"`
	Sizes    []Size    `json:"sizes"`
	Counters *Counters `json:"counters,omitempty"` // nil where ncu was not available
}

// Save writes the profile as DIR/KERNEL.json.
func (p *Profile) Save(dir string) (string, error) { return jsonfile.Save(dir, p.Kernel+".json", p) }

// Load reads a profile written by Save.
func Load(path string) (*Profile, error) {
	var p Profile
	if err := jsonfile.Load(path, ProfileKind, &p); err != nil {
		return nil, err
	}
	if p.Kernel == "" || len(p.Sizes) == 0 {
		return nil, ProfileKind.Not(path, "no kernel or no sizes")
	}
	return &p, nil
}

// ProfileKind is the kind of file Save writes.
var ProfileKind = jsonfile.Kind{What: "a carve profile",
	Want: "only the KERNEL.json files that 'carve profile --out DIR' writes (and calibration.json) in DIR"}

// LoadDir reads every profile in dir.
func LoadDir(dir string) (map[string]*Profile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]*Profile{}
	for _, path := range paths {
		if filepath.Base(path) == CalibrationFile {
			continue
		}
		p, err := Load(path)
		if err != nil {
			return nil, err
		}
		out[p.Kernel] = p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no profiles in %s: make them with carve profile --out %s", dir, dir)
	}
	return out, nil
}
