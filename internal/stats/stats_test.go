// Tests of stats.go: a sample's summary.

package stats

import "testing"

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Stats
	}{
		{nil, Stats{}},
		{[]float64{3}, Stats{N: 1, Min: 3, P25: 3, P50: 3, P75: 3, P99: 3, Max: 3, Mean: 3}},
		{[]float64{4, 1, 3, 2, 5}, Stats{N: 5, Min: 1, P25: 2, P50: 3, P75: 4, P99: 4.96, Max: 5, Mean: 3}},
		{[]float64{1, 2}, Stats{N: 2, Min: 1, P25: 1.25, P50: 1.5, P75: 1.75, P99: 1.99, Max: 2, Mean: 1.5}},
	} {
		got := Summarize(tc.in)
		if !near(got, tc.want) {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func near(a, b Stats) bool {
	d := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return a.N == b.N && d(a.Min, b.Min) && d(a.P25, b.P25) && d(a.P50, b.P50) && d(a.P75, b.P75) && d(a.P99, b.P99) && d(a.Max, b.Max) && d(a.Mean, b.Mean)
}
