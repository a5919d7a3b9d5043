// FromProfiles: the model's kernels, and the GPU's constants measured from
// them, built from a set of profiles.

package model

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// FromProfiles builds the model's kernels from profiles, and measures the
// GPU's constants from them:
//   - BW_max is the nominal DRAM bandwidth the profiles recorded;
//   - EM_BW is the most bandwidth any kernel reached alone on all SMs;
//   - S_p: the paper derives it from the simulated GPU's L2 banks per SM,
//     which an H100 does not publish. Reading: it marks where bandwidth
//     saturates, so S_p is taken as the least fraction of the SMs on which
//     the most bandwidth-hungry kernel already reaches 95% of its bandwidth
//     on all SMs;
//   - alpha keeps the paper's 100 (a modelling choice, not a GPU property).
func FromProfiles(ps map[string]*Profile) (GPU, map[string]*Kernel, error) {
	var g GPU
	ks := map[string]*Kernel{}
	names := make([]string, 0, len(ps))
	for name := range ps {
		names = append(names, name)
	}
	sort.Strings(names)
	var hungry *Kernel
	best := 0.0
	for _, name := range names {
		p := ps[name]
		if p.Counters == nil {
			return g, nil, fmt.Errorf("profile of %s has no counters (profile it where ncu is installed)", name)
		}
		if g.N == 0 {
			g.N, g.BWMax = p.SMs, p.NominalBW
		}
		if p.SMs != g.N || p.NominalBW != g.BWMax {
			return g, nil, fmt.Errorf("profile of %s is of another GPU (%d SMs, %.0f GB/s; others %d, %.0f)", name, p.SMs, p.NominalBW, g.N, g.BWMax)
		}
		k := &Kernel{Name: name, Latency: map[int]float64{}, DRAMBytes: p.Counters.DRAMBytes,
			L2Accesses: p.Counters.L2Requests, Instructions: p.Counters.Instructions}
		for _, s := range p.Sizes {
			k.Latency[s.SMs] = s.Stats.P50
		}
		bw, err := k.BWIsolated(g.N)
		if err != nil {
			return g, nil, err
		}
		if bw > best {
			best, hungry = bw, k
		}
		ks[name] = k
	}
	if len(ks) == 0 {
		return g, nil, errors.New("no profiles")
	}
	if g.BWMax <= 0 {
		return g, nil, errors.New("the profiles record no nominal bandwidth")
	}
	g.EMBW, g.Alpha = best, 100
	g.Sp = 1
	sms := make([]int, 0, len(hungry.Latency))
	for n := range hungry.Latency {
		sms = append(sms, n)
	}
	sort.Ints(sms)
	for _, n := range sms {
		if bw, _ := hungry.BWIsolated(n); bw >= 0.95*best {
			g.Sp = float64(n) / float64(g.N)
			break
		}
	}
	g.MissBanks = math.Round(float64(g.N) * (1 - g.Sp))
	return g, ks, nil
}
