// carve's calibration: the model built from a directory of profiles, with
// or without the shared DRAM bandwidth carve bench fit found, and that
// calibration saved as calibration.json.

package model

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/jsonfile"
)

// CalibrationFile is the name carve bench fit gives its calibration, in
// its output directory and beside the profiles it was fitted with, where
// LoadCalibrated finds it.
const CalibrationFile = "calibration.json"

// FromDir reads the profiles in dir and builds the model from them, with
// no calibration (the paper's model needs none).
func FromDir(dir string) (GPU, map[string]*Kernel, error) {
	ps, err := LoadDir(dir)
	if err != nil {
		return GPU{}, nil, err
	}
	return FromProfiles(ps)
}

// LoadCalibrated is FromDir with carve's shared bandwidth from a
// calibration written by carve bench fit: the file named, else
// DIR/calibration.json where it exists. It returns the calibration's path,
// "" where there was none: carve's model then shares the most bandwidth one
// kernel reached, which overstates it.
func LoadCalibrated(dir, calibration string) (GPU, map[string]*Kernel, string, error) {
	g, ks, err := FromDir(dir)
	if err != nil {
		return g, nil, "", err
	}
	if calibration == "" {
		p := filepath.Join(dir, CalibrationFile)
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return g, ks, "", nil
			}
			return g, nil, "", err
		}
		calibration = p
	}
	var c GPU
	if err := jsonfile.Load(calibration, CalibrationKind, &c); err != nil {
		return g, nil, "", err
	}
	if c.N == 0 || c.SharedBW == 0 {
		return g, nil, "", CalibrationKind.Not(calibration, "no SM count or no shared bandwidth")
	}
	if c.N != g.N || c.SharedBW <= 0 {
		return g, nil, "", fmt.Errorf("%s is no calibration for these profiles (%d SMs, shared bandwidth %g)", calibration, c.N, c.SharedBW)
	}
	g.SharedBW = c.SharedBW
	return g, ks, calibration, nil
}

// CalibrationKind is the kind of file SaveCalibration writes.
var CalibrationKind = jsonfile.Kind{What: "a carve calibration", Want: "the calibration.json that 'carve bench fit' writes"}

// SaveCalibration writes g as DIR/calibration.json.
func SaveCalibration(g GPU, dir string) (string, error) {
	return jsonfile.Save(dir, CalibrationFile, g)
}
