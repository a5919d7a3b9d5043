// The estimate of an LS tenant's requests' p99 from its busy periods
// (Estimate, an M/G/1 queue's), the moments it takes of them, and the
// utilization at which it reaches a target (Goal).

package slo

import (
	"math"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Estimate is the p99 of the latency of requests served one at a time,
// each the busy period of h, at utilization rho (Poisson arrivals: an
// M/G/1 queue): the periods' p99 plus the wait's p99. A request waits
// with probability rho, and then for about an exponential time of mean R
// / (1 - rho), R = E[S^2] / 2E[S] the residual of the period in service
// (Pollaczek-Khinchine's mean wait over rho): its p99 is that mean times
// ln(100 rho), 0 for rho up to 0.01; 1 - rho is at least MinIdle. For
// exponential periods that is the M/M/1 queue's p99; for periods of
// nearly one length it is a little over a simulated queue's. R is of the
// periods up to their p99 (moments).
func Estimate(h ctl.Hist, rho float64) time.Duration {
	p99 := h.Quantile(quantile)
	mean, residual := moments(h)
	if mean <= 0 || rho <= 0.01 {
		return p99
	}
	wait := residual / math.Max(1-rho, MinIdle) * math.Log(100*math.Min(rho, 1))
	return p99 + time.Duration(wait*float64(time.Second))
}

// moments are the mean period of h and the residual R = E[S^2] / 2E[S],
// in seconds, of its buckets' midpoints up to the bucket of its p99: a
// few periods far longer than the rest (an LS tenant's warm-up, a
// cuDNN autotuning pass, a graph's capture: the alone periods hold them
// from its start) would otherwise set both: 20 periods of 200 ms among
// 3000 of 1 ms make R 58 ms, not 0.5. On the GPU, with them counted, a
// multiple's target came out 56 ms where the requests' p99 alone was 13
// (results/h100-580.159.04-2026-11-27/slo-trace/).
func moments(h ctl.Hist) (mean, residual float64) {
	n := h.Count()
	if n == 0 {
		return 0, 0
	}
	top := float64(n) * quantile
	var count, sum, m2, below float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		mid := boundSeconds(i - 1)
		if i < ctl.HistBuckets-1 {
			mid = (mid + boundSeconds(i)) / 2
		}
		count += float64(c)
		sum += float64(c) * mid
		m2 += float64(c) * mid * mid
		if below += float64(c); below >= top {
			break
		}
	}
	if sum <= 0 {
		return 0, 0
	}
	return sum / count, m2 / (2 * sum)
}

// boundSeconds is ctl.HistBound(i) in seconds, 0 below bucket 0.
func boundSeconds(i int) float64 {
	if i < 0 {
		return 0
	}
	return ctl.HistBound(i).Seconds()
}

// Goal is the utilization at which the estimate of busy periods h
// (Estimate) is d, by bisection on [0, Saturated]: 0 where their p99 is
// d or more, Saturated where the estimate there is under d.
func Goal(h ctl.Hist, d time.Duration) float64 {
	if Estimate(h, 0) >= d {
		return 0
	}
	if Estimate(h, Saturated) <= d {
		return Saturated
	}
	lo, hi := 0.0, Saturated
	for range 30 {
		mid := (lo + hi) / 2
		if Estimate(h, mid) <= d {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
