// What evaluating a model takes: random co-run groups of kernels on
// partitions (the paper's section 7.3), and the summary of its errors
// against measurements.

package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Member is one kernel of a co-run group, on a partition of TPCs.
type Member struct {
	Kernel string `json:"kernel"`
	TPCs   int    `json:"tpcs"`
}

// RandomGroups draws n groups as the paper's section 7.3 does: 2 to 6
// distinct kernels each, every kernel on a size drawn from sizes (TPCs),
// redrawn until the group fits in total TPCs.
func RandomGroups(seed uint64, n int, kernels []string, sizes []int, total int) ([][]Member, error) {
	if len(kernels) < 2 {
		return nil, fmt.Errorf("%d kernels: want at least 2", len(kernels))
	}
	if slices.Min(sizes)*2 > total {
		return nil, fmt.Errorf("two partitions of %d TPCs do not fit in %d", slices.Min(sizes), total)
	}
	r := rand.New(rand.NewPCG(seed, 0x63617276))
	var out [][]Member
	for len(out) < n {
		k := 2 + r.IntN(min(5, len(kernels)-1))
		if k*slices.Min(sizes) > total {
			continue
		}
		names := slices.Clone(kernels)
		r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for {
			g, sum := make([]Member, k), 0
			for i := range g {
				g[i] = Member{Kernel: names[i], TPCs: sizes[r.IntN(len(sizes))]}
				sum += g[i].TPCs
			}
			if sum <= total {
				out = append(out, g)
				break
			}
		}
	}
	return out, nil
}

// ErrorSummary is how a model's predictions compare with measurements:
// errors are (predicted - measured) / measured.
type ErrorSummary struct {
	Model   string          `json:"model"`
	N       int             `json:"n"`
	MAE     float64         `json:"mean_abs_error"`
	Mean    float64         `json:"mean_error"`
	Over    int             `json:"over"`
	Under   int             `json:"under"`
	MaxOver float64         `json:"max_over"`
	MaxUnd  float64         `json:"max_under"`
	BySize  map[int]float64 `json:"mae_by_group_size"`
	// Within20 counts predictions within the paper's 20% margin.
	Within20 int `json:"within_20pct"`
}

// Summarize computes the summary of errs, with the group size of each.
func Summarize(model string, errs []float64, groupSize []int) ErrorSummary {
	s := ErrorSummary{Model: model, N: len(errs), BySize: map[int]float64{}}
	count := map[int]int{}
	for i, e := range errs {
		s.MAE += math.Abs(e)
		s.Mean += e
		if e > 0 {
			s.Over++
		} else if e < 0 {
			s.Under++
		}
		s.MaxOver, s.MaxUnd = max(s.MaxOver, e), min(s.MaxUnd, e)
		if math.Abs(e) <= 0.2 {
			s.Within20++
		}
		s.BySize[groupSize[i]] += math.Abs(e)
		count[groupSize[i]]++
	}
	if len(errs) > 0 {
		s.MAE /= float64(len(errs))
		s.Mean /= float64(len(errs))
	}
	for k, c := range count {
		s.BySize[k] /= float64(c)
	}
	return s
}
