// Fit: the shared DRAM bandwidth of carve's model fitted to one
// evaluation's co-runs, then every evaluation predicted with it, in sample
// and held out.

package evaluate

import (
	"fmt"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/model"
)

// Fitted is what Fit found and wrote.
type Fitted struct {
	GPU         model.GPU     // with SharedBW fitted
	MAE         float64       // on the training evaluation
	Calibration []string      // the calibration files written
	Evaluations []*Evaluation // the training one first, then the held-out ones, predicted again
	Names       []string      // their directories under out
}

// Fit fits the shared DRAM bandwidth of carve's model to the co-runs of the
// evaluation at paths[0], predicts it (in sample) and every other one (held
// out) again with it, and writes each to OUT/train-NAME or OUT/heldout-NAME
// with its plots. The calibration goes to OUT/calibration.json and beside
// the profiles, where predict, plan and bench predict take it by default.
// The measurements stay as they were.
func Fit(profiles string, paths []string, out string) (*Fitted, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no evaluation to fit to")
	}
	g, ks, err := model.FromDir(profiles)
	if err != nil {
		return nil, err
	}
	train, err := Load(paths[0])
	if err != nil {
		return nil, err
	}
	obs, err := train.Observed(ks)
	if err != nil {
		return nil, err
	}
	f := &Fitted{}
	if g.SharedBW, f.MAE, err = model.FitSharedBW(obs, model.Pull(ks), g.EMBW); err != nil {
		return nil, err
	}
	f.GPU = g
	for _, dir := range []string{out, profiles} {
		p, err := model.SaveCalibration(g, dir)
		if err != nil {
			return nil, err
		}
		f.Calibration = append(f.Calibration, p)
	}
	for i, path := range paths {
		ev := train
		if i > 0 {
			if ev, err = Load(path); err != nil {
				return nil, err
			}
		}
		if err := ev.Repredict(g, ks); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ev.FittedOn, ev.Calibration = paths[0], f.Calibration[0]
		name := "train-" + filepath.Base(filepath.Dir(path))
		if i > 0 {
			name = "heldout-" + filepath.Base(filepath.Dir(path))
		}
		if _, err := ev.Save(filepath.Join(out, name)); err != nil {
			return nil, err
		}
		f.Evaluations, f.Names = append(f.Evaluations, ev), append(f.Names, name)
	}
	return f, nil
}
