// carve bench predict: random groups of profiled kernels co-run, each in a
// partition of its own, and their measured times set against the model's
// prediction.

package bench

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/carve-gpu/carve/internal/evaluate"
	"github.com/carve-gpu/carve/internal/model"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/stats"
)

// PredictOptions are carve bench predict's flags.
type PredictOptions struct {
	Profiles, Calibration string
	Groups, Rounds        int
	Seed                  uint64
	Sizes                 []int // partition sizes to draw from, in TPCs
	Progress              Progress
}

// Check rejects options that cannot run, before the GPU is asked.
func (o PredictOptions) Check() error {
	if o.Groups < 1 || o.Rounds < 1 {
		return errors.New("--groups and --rounds: want at least 1")
	}
	return nil
}

// Predict draws o.Groups random groups of 2 to 6 distinct profiled kernels
// (the latency-prediction paper's section 7.3), each on a partition size
// from o.Sizes with the group within the GPU, runs each group in disjoint
// GPC-packed partitions (one worker process per kernel under e's MPS
// daemon, all started together in every round), and compares each kernel's
// median latency with the paper's model, carve's and the latency alone.
func Predict(e *Env, o PredictOptions) (*evaluate.Evaluation, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	g, ks, calib, err := model.LoadCalibrated(o.Profiles, o.Calibration)
	if err != nil {
		return nil, err
	}
	if g.N != e.Topo.SMCount {
		return nil, fmt.Errorf("the profiles are of a GPU with %d SMs, this one has %d", g.N, e.Topo.SMCount)
	}
	kernels := make([]string, 0, len(ks))
	for name := range ks {
		kernels = append(kernels, name)
	}
	slices.Sort(kernels)
	drawn, err := model.RandomGroups(o.Seed, o.Groups, kernels, o.Sizes, len(e.Topo.TPCs))
	if err != nil {
		return nil, err
	}
	ev := &evaluate.Evaluation{Device: e.Topo.Device, UUID: e.Topo.UUID, Driver: e.Topo.Driver,
		Date: time.Now().UTC().Format(time.RFC3339), Seed: o.Seed, Rounds: o.Rounds, Sizes: o.Sizes,
		Profiles: o.Profiles, Calibration: calib, GPU: g}
	w := Workers{Exe: e.Exe, Env: e.MPSEnv()}
	for gi, members := range drawn {
		runs := make([]evaluate.Run, len(members))
		setups := make([]Setup, len(members))
		argvs := make([][]string, len(members))
		var used partition.Set
		for i, m := range members {
			set := partition.Pack(e.Topo, m.TPCs, used)
			if len(set.Intersect(used)) > 0 {
				return nil, fmt.Errorf("group %d: no room for %d more TPCs beside %s", gi, m.TPCs, used)
			}
			used = used.Union(set)
			runs[i] = evaluate.Run{Member: m, SMs: 2 * m.TPCs, Set: set.String()}
			setups[i] = Setup{VictimPrefix: e.CarveRun(set)}
			argvs[i] = e.Worker("__corun", "--name", m.Kernel)
		}
		if err := evaluate.Predict(g, ks, runs); err != nil {
			return nil, err
		}
		if err := coRun(w, setups, argvs, runs, o.Rounds); err != nil {
			return nil, fmt.Errorf("group %d: %w", gi, err)
		}
		ev.Groups = append(ev.Groups, runs)
		o.Progress.report(gi+1, len(drawn))
	}
	ev.Summarize()
	return ev, nil
}

// coRun runs one group for rounds rounds and records each kernel's times
// and median.
func coRun(w Workers, setups []Setup, argvs [][]string, runs []evaluate.Run, rounds int) error {
	c, err := w.StartCoRun(setups, argvs)
	if err != nil {
		return err
	}
	defer c.Stop()
	for range rounds {
		ms, err := c.Round()
		if err != nil {
			return err
		}
		for i := range runs {
			runs[i].MeasuredMS = append(runs[i].MeasuredMS, ms[i])
		}
	}
	for i := range runs {
		runs[i].Measured = stats.Summarize(runs[i].MeasuredMS).P50
	}
	return nil
}
