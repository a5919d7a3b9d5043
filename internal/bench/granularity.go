package bench

import (
	"fmt"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// GranularityCarve times the GEMM on every TPC count 1..N, each partition
// placed GPC-packed as `carve run -n K` would, reps times after one warm-up.
func GranularityCarve(g *GEMM, t *topo.Topology, reps int, progress func(done, total int)) (Series, error) {
	s := Series{Mechanism: "carve", Measured: true, Note: "TPC masks, in-process (the same masks the shim writes)"}
	for k := 1; k <= len(t.TPCs); k++ {
		set := partition.Pack(t, k, nil)
		mask, err := partition.Mask(t, set)
		if err != nil {
			return s, err
		}
		ms, err := g.Samples(&mask, reps)
		if err != nil {
			return s, fmt.Errorf("%d TPCs: %w", k, err)
		}
		sms := 0
		for _, i := range set {
			sms += len(t.TPCs[i].SMs)
		}
		s.Points = append(s.Points, Point{TPCs: k, SMs: sms, Stats: Summarize(ms)})
		progress(k, len(t.TPCs))
	}
	return s, nil
}

// MIGSeries is the documented MiG sizes as a series without times.
func MIGSeries() Series {
	s := Series{Mechanism: "MiG", Note: "H100 instance sizes from NVIDIA's documentation; MiG cannot be enabled on this GPU"}
	for _, sms := range MIGSliceSMs {
		s.Points = append(s.Points, Point{SMs: sms, TPCs: sms / 2})
	}
	return s
}

// GranularityGreen times the GEMM (n x n, reps runs after a warm-up) in a
// green context of 1, 2, ... of the driver's smallest SM groups, and of all
// SMs, each context on a thread of its own.
func GranularityGreen(ordinal, n, reps int, progress func(done, total int)) (Series, error) {
	s := Series{Mechanism: "green contexts", Measured: true, Note: "cuDevSmResourceSplitByCount groups; SMs, not TPC sets; in one process only"}
	groups, rest, err := GreenGroups(ordinal)
	if err != nil {
		return s, err
	}
	sizes := make([][]cuda.SMResource, 0, len(groups)+1)
	for k := 1; k <= len(groups); k++ {
		sizes = append(sizes, groups[:k])
	}
	if rest.SMCount() > 0 {
		sizes = append(sizes, append(append([]cuda.SMResource(nil), groups...), rest))
	}
	for i, res := range sizes {
		var ms []float64
		err := OnThread(func() error {
			sess, gc, err := OpenGreen(ordinal, "bench", res...)
			if err != nil {
				return err
			}
			defer gc.Destroy()
			g, err := NewGEMM(sess, n)
			if err != nil {
				return err
			}
			defer g.Free()
			ms, err = g.Samples(nil, reps)
			return err
		})
		if err != nil {
			return s, fmt.Errorf("green context of %d SMs: %w", SMsOf(res), err)
		}
		s.Points = append(s.Points, Point{SMs: SMsOf(res), Stats: Summarize(ms)})
		progress(i+1, len(sizes))
	}
	return s, nil
}
