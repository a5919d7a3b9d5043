// Package stats summarizes samples: the quantiles and mean every result of
// carve reports. Pure arithmetic, no GPU.
package stats

import (
	"math"
	"sort"
)

// Stats summarizes samples (milliseconds, unless a field says otherwise).
type Stats struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P25  float64 `json:"p25"`
	P50  float64 `json:"p50"`
	P75  float64 `json:"p75"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Summarize computes Stats; quantiles interpolate linearly between ranks.
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		r := p * float64(len(s)-1)
		lo := int(math.Floor(r))
		if lo+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[lo] + (r-float64(lo))*(s[lo+1]-s[lo])
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Stats{N: len(s), Min: s[0], P25: q(0.25), P50: q(0.5), P75: q(0.75), P99: q(0.99), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}
