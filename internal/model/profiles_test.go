// Tests of profiles.go: the model's kernels and the GPU's constants built
// from profiles.

package model

import (
	"testing"

	"github.com/carve-gpu/carve/internal/stats"
)

func prof(name string, bytes float64, ms map[int]float64) *Profile {
	p := &Profile{Kernel: name, SMs: 8, TPCs: 4, NominalBW: 100,
		Counters: &Counters{DRAMBytes: bytes, L2Requests: 10, Instructions: 1e4}}
	for sms := 2; sms <= 8; sms += 2 {
		p.Sizes = append(p.Sizes, Size{TPCs: sms / 2, SMs: sms, Stats: stats.Summarize([]float64{ms[sms]})})
	}
	return p
}

func TestFromProfiles(t *testing.T) {
	// mem: 80e6 bytes in 1 ms on 8 SMs = 80 GB/s, and 76.2 GB/s (95.2%)
	// already on 6: S_p = 6/8.
	ps := map[string]*Profile{
		"mem": prof("mem", 80e6, map[int]float64{2: 2, 4: 1.2, 6: 1.05, 8: 1}),
		"cpu": prof("cpu", 1e6, map[int]float64{2: 4, 4: 2, 6: 1.4, 8: 1}),
	}
	g, ks, err := FromProfiles(ps)
	if err != nil {
		t.Fatal(err)
	}
	if g.N != 8 || g.BWMax != 100 || !near(g.EMBW, 80) || g.Sp != 0.75 || g.MissBanks != 2 || g.Alpha != 100 {
		t.Errorf("constants %+v", g)
	}
	if c, _ := ks["cpu"].C(4); c != 2 || ks["cpu"].L2Accesses != 10 {
		t.Errorf("kernel %+v", ks["cpu"])
	}
	ps["cpu"].Counters = nil
	if _, _, err := FromProfiles(ps); err == nil {
		t.Error("a profile without counters was accepted")
	}
	ps["cpu"] = prof("cpu", 1e6, map[int]float64{2: 4, 4: 2, 6: 1.4, 8: 1})
	ps["cpu"].SMs = 16
	if _, _, err := FromProfiles(ps); err == nil {
		t.Error("profiles of two GPUs were mixed")
	}
}
