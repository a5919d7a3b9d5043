// Tests of hist.go: the bounds, quantiles by interpolation within a
// bucket, and the window between two snapshots.

package ctl_test

import (
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// bucket is the index of the bucket whose bound is b.
func bucket(t *testing.T, b time.Duration) int {
	for i := range ctl.HistBuckets - 1 {
		if ctl.HistBound(i) == b {
			return i
		}
	}
	t.Fatalf("no bucket's bound is %v", b)
	return 0
}

func TestHistBounds(t *testing.T) {
	for i, want := range []time.Duration{1000, 1250, 1500, 1750, 2000, 2500, 3000, 3500, 4000, 5000} {
		if got := ctl.HistBound(i); got != want {
			t.Errorf("bound %d: %v, want %v", i, got, want)
		}
	}
	if got := ctl.HistBound(ctl.HistBuckets - 2); got < 100*time.Second || got > 101*time.Second {
		t.Errorf("the last bound %v, want about 100 s", got)
	}
}

func TestHistQuantile(t *testing.T) {
	for _, c := range []struct {
		name   string
		counts map[time.Duration]uint64 // by the bucket's bound
		last   uint64                   // in the last bucket
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0, 0.5, 0},
		{"one bucket, its middle", map[time.Duration]uint64{2048 * time.Microsecond: 10}, 0, 0.5, 1920 * time.Microsecond}, // 1792 to 2048 us
		{"one bucket, p99", map[time.Duration]uint64{2048 * time.Microsecond: 100}, 0, 0.99, 2045440 * time.Nanosecond},
		{"p50 in the lower of two", map[time.Duration]uint64{1250: 60, 10 * time.Microsecond: 40}, 0, 0.5, 1000 + 250*5/6},
		{"p99 in the upper of two", map[time.Duration]uint64{1250: 60, 10 * time.Microsecond: 40}, 0, 0.99, 8000 + 2000*39/40},
		{"below 1 us", map[time.Duration]uint64{1000: 4}, 0, 0.5, 500},
		{"past the last bound", map[time.Duration]uint64{1000: 1}, 99, 0.99, ctl.HistBound(ctl.HistBuckets - 2)},
	} {
		var h ctl.Hist
		for b, n := range c.counts {
			h.Counts[bucket(t, b)] = n
		}
		h.Counts[ctl.HistBuckets-1] = c.last
		if got := h.Quantile(c.q); got != c.want {
			t.Errorf("%s: quantile %v is %v, want %v", c.name, c.q, got, c.want)
		}
	}
}

func TestHistSub(t *testing.T) {
	var old, cur ctl.Hist
	old.Counts[3], old.Counts[10], old.Sum = 5, 1, 10*time.Millisecond
	cur = old
	cur.Counts[10], cur.Counts[20], cur.Sum = 4, 2, 25*time.Millisecond
	d := cur.Sub(old)
	if d.Count() != 5 || d.Counts[10] != 3 || d.Counts[20] != 2 || d.Counts[3] != 0 || d.Sum != 15*time.Millisecond {
		t.Errorf("window %v (count %d, sum %v), want 3 in bucket 10, 2 in 20, 15 ms", d.Counts, d.Count(), d.Sum)
	}
	if d := old.Sub(cur); d != old {
		t.Errorf("a histogram against a later one (a block made afresh): %v, want itself", d)
	}
}
