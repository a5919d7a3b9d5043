// An LS tenant's busy periods as a histogram (shim/carve_ctl.h's struct
// carve_hist): the buckets' bounds, mirrored from CARVE_HIST_BOUND_NS and
// checked against it by TestHistBoundsMatchHeader, and Hist, what a
// snapshot reads: its quantiles by interpolation within a bucket, the
// share of its periods within a time (an SLO's attainment), and the
// difference of two (a window).

package ctl

import (
	"sync/atomic"
	"time"
)

// HistBuckets is CARVE_HIST_BUCKETS: the last bucket counts the periods
// past HistBound(HistBuckets-2).
const HistBuckets = 108

// HistBound is CARVE_HIST_BOUND_NS(i): bucket i (below HistBuckets-1)
// counts the periods shorter than it and no shorter than HistBound(i-1);
// octaves from 1 us, each cut in four equal steps (1, 1.25, 1.5, 1.75, 2,
// 2.5 ... us), up to 100.7 s.
func HistBound(i int) time.Duration {
	return time.Duration((uint64(1000) << (i / 4)) * uint64(4+i%4) / 4)
}

// Hist is a histogram of busy periods: Counts[i] in bucket i, Sum their
// total time.
type Hist struct {
	Counts [HistBuckets]uint64
	Sum    time.Duration
}

// read loads h, each counter atomically (the shim's poller adds to them
// as it runs: the buckets and the sum may be a period apart).
func (b *BlockHist) read() Hist {
	var h Hist
	for i := range h.Counts {
		h.Counts[i] = atomic.LoadUint64(&b.Bucket[i])
	}
	h.Sum = time.Duration(atomic.LoadUint64(&b.SumNS))
	return h
}

// Count is how many periods h holds.
func (h Hist) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Sub is the periods h holds that old (an earlier snapshot of the same
// block) did not: those of the window between them. A bucket that went
// down (another block, or one made afresh) counts as h's.
func (h Hist) Sub(old Hist) Hist {
	var d Hist
	for i := range h.Counts {
		if h.Counts[i] >= old.Counts[i] {
			d.Counts[i] = h.Counts[i] - old.Counts[i]
		} else {
			return h
		}
	}
	if h.Sum >= old.Sum {
		d.Sum = h.Sum - old.Sum
	}
	return d
}

// Within is the share of the periods h holds that were shorter than d,
// interpolating within d's bucket as Quantile does; 1 when h is empty.
func (h Hist) Within(d time.Duration) float64 {
	n := h.Count()
	if n == 0 {
		return 1
	}
	var below float64
	for i, c := range h.Counts {
		var lo time.Duration
		if i > 0 {
			lo = HistBound(i - 1)
		}
		if i == HistBuckets-1 || d < HistBound(i) {
			if d > lo && i < HistBuckets-1 {
				below += float64(c) * float64(d-lo) / float64(HistBound(i)-lo)
			}
			break
		}
		below += float64(c)
	}
	return below / float64(n)
}

// Quantile is the q-th quantile (0 < q <= 1) of the periods h holds, by
// linear interpolation within the bucket it falls in (as Prometheus's
// histogram_quantile does): to within the bucket's width, a quarter of
// an octave. 0 when h is empty; in the last bucket, its lower bound.
func (h Hist) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := q * float64(n)
	var below uint64
	for i, c := range h.Counts {
		if c == 0 || float64(below+c) < rank {
			below += c
			continue
		}
		var lo time.Duration
		if i > 0 {
			lo = HistBound(i - 1)
		}
		if i == HistBuckets-1 {
			return lo
		}
		hi := HistBound(i)
		return lo + time.Duration(float64(hi-lo)*(rank-float64(below))/float64(c))
	}
	return HistBound(HistBuckets - 2)
}
