// Package model predicts a kernel's latency on n SMs and the latencies of
// kernels co-running in disjoint partitions, after the memory-aware latency
// prediction paper (seeds/memory-aware-latency-prediction.txt): latency on
// n SMs (its eq. 1-4), bandwidth on n SMs (eq. 17), and interference
// through execution windows and penalties (eq. 5-16).
//
// Paper implements the equations as written. Where the paper leaves a
// choice open, the choice made here is named in a comment that starts with
// "Reading:". Times are in ms, bandwidths in GB/s, sizes in SMs.
//
// It also holds the profiles it reads (Profile, written by internal/profile
// on a GPU), carve's own interference model and its calibration, and the
// planner. It is arithmetic over files: it imports nothing that loads the
// driver, and the layering test keeps it so.
package model

import (
	"fmt"
	"math"
	"sort"
)

// GPU holds the model's constants for one GPU, measured there rather than
// copied from the paper's simulated RTX 2060.
type GPU struct {
	N     int     // SMs
	BWMax float64 // nominal DRAM bandwidth, GB/s (the paper's BW_max, 348 there)
	EMBW  float64 // effective maximum: the most any profiled kernel reached, GB/s (330 there)
	Sp    float64 // saturation point, a fraction of N (0.8 there: 24 L2 banks / 30 SMs)
	Alpha float64 // steepness of Sat (100 there, chosen by experiment; kept)
	// MissBanks is eq. 17's N minus L2 banks (6 there). Reading: with the
	// banks per SM taken as Sp, MissBanks = N - Sp*N.
	MissBanks float64
	// SharedBW is carve's model's one fitted constant (see PredictShared);
	// 0 until fitted, when EMBW stands in for it.
	SharedBW float64 `json:",omitempty"`
}

// Shared is the bandwidth carve's model lets co-running kernels share.
func (g GPU) Shared() float64 {
	if g.SharedBW > 0 {
		return g.SharedBW
	}
	return g.EMBW
}

// Kernel is what the model knows of a kernel, all from its profile alone.
type Kernel struct {
	Name         string
	Latency      map[int]float64 // C_k(n): measured latency alone on n SMs, ms
	DRAMBytes    float64         // per launch, on all SMs
	L2Accesses   float64         // per launch
	Instructions float64         // executed (thread) instructions per launch
}

// C returns C_k(n), the measured latency on n SMs.
func (k *Kernel) C(n int) (float64, error) {
	c, ok := k.Latency[n]
	if !ok {
		return 0, fmt.Errorf("%s was not profiled on %d SMs", k.Name, n)
	}
	return c, nil
}

// BWIsolated is BW_isolated(k, n): the kernel's DRAM bandwidth alone on n
// SMs, GB/s. Reading: the paper profiled L2 bandwidth in a simulator whose
// L2 and DRAM bandwidths nearly coincide; on hardware carve measures DRAM
// bytes once (on all SMs) and divides by the measured latency on n SMs.
func (k *Kernel) BWIsolated(n int) (float64, error) {
	c, err := k.C(n)
	if err != nil {
		return 0, err
	}
	return k.DRAMBytes / (c * 1e6), nil // bytes per ms / 1e6 = GB/s
}

// Ubw is eq. 1: U_bw(k) = BW_isolated(k, N) / BW_max.
func (g GPU) Ubw(k *Kernel) (float64, error) {
	bw, err := k.BWIsolated(g.N)
	return bw / g.BWMax, err
}

// Sat is eq. 2: 1 / (1 + e^(-alpha (u - S_p))).
func (g GPU) Sat(u float64) float64 {
	return 1 / (1 + math.Exp(-g.Alpha*(u-g.Sp)))
}

// KAI is eq. 3: executed instructions / L2 accesses / 1000.
func KAI(k *Kernel) float64 {
	if k.L2Accesses == 0 {
		return 0
	}
	return k.Instructions / k.L2Accesses / 1000
}

// Tc is eq. 4, the latency on n SMs predicted from the latency on all N:
// C_k(N) / ((Sat(U_bw) + 1) (N - KAI U_bw)) * N^2 / n.
func (g GPU) Tc(k *Kernel, n int) (float64, error) {
	cN, err := k.C(g.N)
	if err != nil {
		return 0, err
	}
	u, err := g.Ubw(k)
	if err != nil {
		return 0, err
	}
	N := float64(g.N)
	return cN / ((g.Sat(u) + 1) * (N - KAI(k)*u)) * N * N / float64(n), nil
}

// BW is eq. 17, the bandwidth required on n SMs predicted from the
// bandwidth on all N: linear below the threshold BW_max * S_p, else
// EM_BW (1 - e^(-n / max(1, Miss_banks))).
func (g GPU) BW(k *Kernel, n int) (float64, error) {
	bwN, err := k.BWIsolated(g.N)
	if err != nil {
		return 0, err
	}
	if bwN < g.BWMax*g.Sp {
		return bwN / float64(g.N) * float64(n), nil
	}
	return g.EMBW * (1 - math.Exp(-float64(n)/math.Max(1, g.MissBanks))), nil
}

// Placement is a kernel on a partition of SMs.
type Placement struct {
	Kernel *Kernel
	SMs    int
}

// Window is an interval in which the set of running kernels is constant.
type Window struct {
	Start, End float64 // ms from the common start
	Running    []int   // indices of the placements running throughout
	BW         float64 // sum of their isolated bandwidths, GB/s
	I          float64 // eq. 7
}

// Prediction is one placement's predicted latency and how it came about.
type Prediction struct {
	Alone   float64   // T_c(k, n), eq. 4 (or measured, see PredictMeasured)
	CoRun   float64   // T_c(k, n, W), eq. 8
	Factors []float64 // I(w) * Pi(k, n, w) in each window the kernel runs in
}

// Windows builds the execution windows of eq. 5-8 under the paper's two
// assumptions: every kernel starts at 0 and runs for its latency alone on
// its partition (C_k(n)). Reading: on hardware the profile's median is that
// latency; the simulator's runs were deterministic.
func Windows(ps []Placement) ([]Window, error) {
	ends := make([]float64, len(ps))
	for i, p := range ps {
		c, err := p.Kernel.C(p.SMs)
		if err != nil {
			return nil, err
		}
		ends[i] = c
	}
	cuts := append([]float64(nil), ends...)
	sort.Float64s(cuts)
	var ws []Window
	start := 0.0
	for _, end := range cuts {
		if end <= start {
			continue
		}
		w := Window{Start: start, End: end}
		for i := range ps {
			if ends[i] >= end {
				w.Running = append(w.Running, i)
				bw, _ := ps[i].Kernel.BWIsolated(ps[i].SMs)
				w.BW += bw
			}
		}
		ws = append(ws, w)
		start = end
	}
	return ws, nil
}

// Predict applies eq. 5-16 of the paper, as written, to kernels co-running
// in disjoint partitions, and returns each one's prediction with the
// windows.
func (g GPU) Predict(ps []Placement) ([]Prediction, []Window, error) {
	return g.predict(ps, g.Tc)
}

// PredictMeasured is carve's first change to the model: eq. 8 scales the
// latency measured alone on the partition (the profile has every size)
// instead of eq. 4's estimate of it.
func (g GPU) PredictMeasured(ps []Placement) ([]Prediction, []Window, error) {
	return g.predict(ps, func(k *Kernel, n int) (float64, error) { return k.C(n) })
}

func (g GPU) predict(ps []Placement, alone func(*Kernel, int) (float64, error)) ([]Prediction, []Window, error) {
	total := 0
	for _, p := range ps {
		if p.SMs < 1 {
			return nil, nil, fmt.Errorf("%s on %d SMs: want at least 1", p.Kernel.Name, p.SMs)
		}
		total += p.SMs
	}
	if total > g.N {
		return nil, nil, fmt.Errorf("partitions of %d SMs in all: the GPU has %d", total, g.N)
	}
	ws, err := Windows(ps)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Prediction, len(ps))
	for i, p := range ps {
		if out[i].Alone, err = alone(p.Kernel, p.SMs); err != nil {
			return nil, nil, err
		}
	}
	for wi := range ws {
		w := &ws[wi]
		w.I = math.Max(1, w.BW/(g.BWMax*g.Sp)) // eq. 7
		size := w.End - w.Start
		// eq. 13 and 16c over the window, with L2 accesses spread evenly
		// over each kernel's run (the paper's "evenly distributed").
		access := map[int]float64{}
		var sumAccess, mda float64
		for _, i := range w.Running {
			c, _ := ps[i].Kernel.C(ps[i].SMs)
			access[i] = ps[i].Kernel.L2Accesses * size / c
			sumAccess += access[i]
			mda = math.Max(mda, access[i]/out[i].Alone) // eq. 16c
		}
		for _, i := range w.Running {
			p := ps[i]
			c, _ := p.Kernel.C(p.SMs)
			overlap := size / c // eq. 5
			pi := 1.0           // eq. 6
			if w.BW >= g.EMBW {
				pi = g.penalties(p, out[i].Alone, overlap, access[i], sumAccess, mda, len(w.Running), w.I)
			}
			f := w.I * pi
			out[i].Factors = append(out[i].Factors, f)
			out[i].CoRun += out[i].Alone * overlap * f // eq. 8
		}
	}
	return out, ws, nil
}

// penalties is eq. 9-16 for one kernel in one window.
func (g GPU) penalties(p Placement, tc, overlap, access, sumAccess, mda float64, running int, iw float64) float64 {
	bw, _ := p.Kernel.BWIsolated(p.SMs)
	pSM := float64(g.N) / float64(p.SMs) / float64(running) // eq. 10
	pAccess := 0.0                                          // eq. 11
	if sumAccess > 0 {
		pAccess = access / sumAccess * overlap
	}
	pBW := bw / (g.BWMax / float64(running)) // eq. 12, 14
	bar := pSM * pAccess * pBW               // eq. 9
	switch {                                 // eq. 15
	case bar < 1:
		return math.Min(pBW, iw)
	case bar >= 2:
		if mda == 0 {
			return 1
		}
		return access / tc / mda // eq. 16a, 16b
	default:
		return bar
	}
}
