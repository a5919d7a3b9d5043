// Plan: the fewest SMs each kernel needs for its co-run latency, as a
// Predictor predicts it, to meet its deadline.

package model

import (
	"fmt"
	"sort"
)

// ErrNoPlacement is wrapped by Plan's error when no partitions meet the
// deadlines.
var ErrNoPlacement = fmt.Errorf("no placement meets the deadlines")

// Predictor predicts co-run latencies (ms) of placements.
type Predictor func([]Placement) ([]float64, error)

// Carve is carve's model with g's constants and the pull of ks.
func (g GPU) Carve(ks map[string]*Kernel) Predictor {
	pull := Pull(ks)
	return func(ps []Placement) ([]float64, error) { return PredictShared(ps, pull, g.Shared()) }
}

// Plan gives each kernel the fewest SMs, among the sizes it was profiled
// on, on which its co-run latency as predict predicts it meets its
// deadline (ms): it starts each kernel on the least size that meets the
// deadline alone, then grows the partition of the kernel that misses its
// deadline by the most, one profiled size at a time, until all meet
// theirs or the GPU is full.
func Plan(g GPU, ks []*Kernel, deadlines []float64, predict Predictor) ([]int, []float64, error) {
	sizes := make([][]int, len(ks))
	at := make([]int, len(ks)) // index into sizes[i]
	for i, k := range ks {
		for n := range k.Latency {
			sizes[i] = append(sizes[i], n)
		}
		sort.Ints(sizes[i])
		at[i] = -1
		for j, n := range sizes[i] {
			if k.Latency[n] <= deadlines[i] {
				at[i] = j
				break
			}
		}
		if at[i] < 0 {
			best := sizes[i][len(sizes[i])-1]
			return nil, nil, fmt.Errorf("%w: %s takes %.3f ms alone on %d SMs, its deadline is %.3f ms",
				ErrNoPlacement, k.Name, k.Latency[best], best, deadlines[i])
		}
	}
	for {
		ps := make([]Placement, len(ks))
		sms, total := make([]int, len(ks)), 0
		for i, k := range ks {
			sms[i] = sizes[i][at[i]]
			ps[i] = Placement{Kernel: k, SMs: sms[i]}
			total += sms[i]
		}
		if total > g.N {
			return nil, nil, fmt.Errorf("%w: they need more than the GPU's %d SMs", ErrNoPlacement, g.N)
		}
		pred, err := predict(ps)
		if err != nil {
			return nil, nil, err
		}
		worst, miss := -1, 1.0
		for i, p := range pred {
			if r := p / deadlines[i]; r > miss {
				worst, miss = i, r
			}
		}
		if worst < 0 {
			return sms, pred, nil
		}
		if at[worst]+1 == len(sizes[worst]) {
			return nil, nil, fmt.Errorf("%w: %s misses its deadline on its largest profiled partition (%d SMs)", ErrNoPlacement, ks[worst].Name, sms[worst])
		}
		at[worst]++
	}
}
