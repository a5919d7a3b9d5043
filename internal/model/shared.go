// carve's own interference model: kernels co-running share one DRAM
// bandwidth, each pulling what it reached alone on its SMs; the prediction,
// and the fit of the shared bandwidth to measured co-runs.

package model

import (
	"fmt"
	"math"
)

// carve's interference model. The real GPU disagrees with the paper's
// model in two ways (results/.../predict): eq. 4 misjudges memory-bound
// kernels alone by up to 2x, and interference comes only from DRAM: beside
// memory-bound neighbours compute-bound kernels move by 1% while
// memory-bound ones slow by 20-80%. So carve predicts from the latency
// measured alone on the partition and lets kernels share DRAM bandwidth:
//
//   - kernel k alone on n SMs needs d_k = DRAM bytes / C_k(n);
//   - it is bandwidth-bound to the degree m_k = d_k / P(n), where P(n) is
//     the most any profiled kernel pulls through n SMs;
//   - while the kernels running together need D = sum d_k above the
//     bandwidth B they can share, each is slowed by 1 + m_k (D/B - 1);
//   - time advances from one kernel's end to the next (the windows of the
//     paper, but moving as kernels slow down).
//
// B is the one constant fitted to co-runs (FitSharedBW): several streams
// at once reach less of the DRAM's bandwidth than one.

// Pull returns P(n), the largest bandwidth any kernel reached alone on n
// SMs, from ks.
func Pull(ks map[string]*Kernel) map[int]float64 {
	p := map[int]float64{}
	for _, k := range ks {
		for n := range k.Latency {
			bw, _ := k.BWIsolated(n)
			p[n] = math.Max(p[n], bw)
		}
	}
	return p
}

// PredictShared returns each placement's predicted co-run latency (ms)
// under carve's model, with the bandwidth share b (GB/s) and the pull P.
func PredictShared(ps []Placement, pull map[int]float64, b float64) ([]float64, error) {
	if b <= 0 {
		return nil, fmt.Errorf("shared bandwidth %g GB/s: want a positive value", b)
	}
	n := len(ps)
	c, d, m := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range ps {
		var err error
		if c[i], err = p.Kernel.C(p.SMs); err != nil {
			return nil, err
		}
		d[i], _ = p.Kernel.BWIsolated(p.SMs)
		if pull[p.SMs] > 0 {
			m[i] = math.Min(1, d[i]/pull[p.SMs])
		}
	}
	left := make([]float64, n) // fraction of each kernel's work not yet done
	end := make([]float64, n)
	for i := range left {
		left[i] = 1
	}
	t := 0.0
	for running := n; running > 0; {
		demand := 0.0
		for i := range ps {
			if left[i] > 0 {
				demand += d[i]
			}
		}
		over := math.Max(1, demand/b)
		rate := make([]float64, n)
		step := math.Inf(1)
		for i := range ps {
			if left[i] > 0 {
				rate[i] = 1 / (c[i] * (1 + m[i]*(over-1)))
				step = math.Min(step, left[i]/rate[i])
			}
		}
		t += step
		for i := range ps {
			if left[i] > 0 {
				left[i] -= rate[i] * step
				if left[i] <= 1e-12 {
					left[i], end[i] = 0, t
					running--
				}
			}
		}
	}
	return end, nil
}

// Observed is one co-run group as measured: its placements and each
// kernel's measured latency (ms).
type Observed struct {
	Placements []Placement
	Measured   []float64
}

// FitSharedBW finds the shared bandwidth B (GB/s, on a 0.5% grid from 30%
// to 150% of emBW) that gives the least mean absolute error over groups.
func FitSharedBW(groups []Observed, pull map[int]float64, emBW float64) (b, mae float64, err error) {
	best, bestB := math.Inf(1), 0.0
	for f := 0.30; f <= 1.5; f += 0.005 {
		cand := f * emBW
		sum, count := 0.0, 0
		for _, g := range groups {
			pred, err := PredictShared(g.Placements, pull, cand)
			if err != nil {
				return 0, 0, err
			}
			for i, p := range pred {
				sum += math.Abs(p-g.Measured[i]) / g.Measured[i]
				count++
			}
		}
		if count == 0 {
			return 0, 0, fmt.Errorf("no co-runs to fit to")
		}
		if e := sum / float64(count); e < best {
			best, bestB = e, cand
		}
	}
	return bestB, best, nil
}
