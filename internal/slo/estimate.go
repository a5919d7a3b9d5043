// The estimate of an LS tenant's requests' p99 from its busy periods
// (Estimate, an M/G/1 queue's), the periods it takes (served), and the
// utilization at which it reaches a target (Goal).

package slo

import (
	"math"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Estimate is the p99 of the latency of requests served one at a time,
// each the busy period of h, at utilization rho (Poisson arrivals: an
// M/G/1 queue): the x at which a request's wait W and its own period S
// exceed x together one time in a hundred. W's tail is the queue's
// exponential one, P(W > w) = C exp(-gamma w), gamma the decay rate where
// lambda (E[exp(gamma S)] - 1) = gamma, lambda = rho / E[S] (Cramer and
// Lundberg), C = (1 - rho) / (lambda E[S exp(gamma S)] - 1); for x past
// every period, P(S + W > x) = C exp(-gamma x) E[exp(gamma S)], so x =
// ln(100 C E[exp(gamma S)]) / gamma, and never less than the periods'
// p99. For exponential periods that is the M/M/1 queue's p99 exactly; for
// periods of one length it is within a few percent of a simulated queue's
// (TestEstimateOfQueues). The periods are h's up to its p99 (served); 1 -
// rho is at least MinIdle; at rho up to 0.01 it is the periods' p99.
// Adding the wait's p99 to the periods' (as an earlier estimate did)
// overstates a lightly loaded queue's p99 about twice: on the GPU at 270
// requests a second it said 5.5 ms where they took 2.7
// (results/h100-580.159.04-2026-11-27/slo-final/i-step).
func Estimate(h ctl.Hist, rho float64) time.Duration {
	p99 := h.Quantile(quantile)
	s, w, mean := served(h)
	if mean <= 0 || rho <= 0.01 {
		return p99
	}
	rho = math.Min(rho, 1-MinIdle)
	lambda := rho / mean
	mgf := func(g float64) (m, dm float64) { // E[exp(gS)] and E[S exp(gS)]
		for i := range s {
			e := w[i] * math.Exp(g*s[i])
			m, dm = m+e, dm+e*s[i]
		}
		return m, dm
	}
	excess := func(g float64) float64 { m, _ := mgf(g); return lambda*(m-1) - g }
	hi := 1 / mean // excess is below 0 just above 0 (rho < 1) and convex
	for excess(hi) <= 0 {
		hi *= 2
	}
	lo := 0.0
	for range 60 {
		if mid := (lo + hi) / 2; excess(mid) <= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	gamma := hi
	m, dm := mgf(gamma)
	c := (1 - rho) / math.Max(lambda*dm-1, 1e-9)
	x := math.Log(100*c*m) / gamma
	return max(p99, time.Duration(x*float64(time.Second)))
}

// served is the distribution of h's periods the estimate takes, in
// seconds: each bucket's midpoint s[i] with its share w[i], up to the
// bucket of h's p99, the periods above it counted at that bucket's (a few
// periods far longer than the rest, an LS tenant's warm-up, a cuDNN
// autotuning pass, a graph's capture, which the alone periods hold from
// its start, would otherwise set the queue's: 20 periods of 200 ms among
// 3000 of 1 ms would make a tail of 200 ms. On the GPU, with them counted,
// a multiple's target came out 56 ms where the requests' p99 alone was 13,
// results/h100-580.159.04-2026-11-27/slo-trace/); and their mean.
func served(h ctl.Hist) (s, w []float64, mean float64) {
	n := h.Count()
	if n == 0 {
		return nil, nil, 0
	}
	top := float64(n) * quantile
	var below float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		mid := boundSeconds(i - 1)
		if i < ctl.HistBuckets-1 {
			mid = (mid + boundSeconds(i)) / 2
		}
		share := float64(c) / float64(n)
		if below += float64(c); below >= top {
			share += (float64(n) - below) / float64(n)
		}
		s, w = append(s, mid), append(w, share)
		mean += share * mid
		if below >= top {
			break
		}
	}
	return s, w, mean
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
