// Tests of model.go, the paper's equations (latency alone, windows,
// co-run predictions with and without contention, penalties), and of
// plan.go's Plan.

package model

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// A ten-SM GPU and two kernels whose every number below is worked out by
// hand from the equations.
var (
	gpu = GPU{N: 10, BWMax: 100, EMBW: 90, Sp: 0.8, Alpha: 100, MissBanks: 2}
	// compute-bound: 1 GB/s on all SMs, KAI 2
	compute = &Kernel{Name: "compute", Latency: map[int]float64{10: 1.0, 5: 2.0}, DRAMBytes: 1e6, L2Accesses: 1000, Instructions: 2e6}
	// memory-bound: 85 GB/s on all SMs (U_bw 0.85), KAI 0.1
	memory = &Kernel{Name: "memory", Latency: map[int]float64{10: 1.0, 5: 1.2, 2: 85.0 / 60}, DRAMBytes: 85e6, L2Accesses: 1e6, Instructions: 1e8}
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestIsolatedEquations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"KAI compute", KAI(compute), 2},
		{"KAI memory", KAI(memory), 0.1},
		{"Sat at S_p", gpu.Sat(0.8), 0.5},
		{"Sat(0.85) = 1/(1+e^-5)", gpu.Sat(0.85), 1 / (1 + math.Exp(-5))},
		// eq. 4: 1 / ((~0 + 1)(10 - 2 * 0.01)) * 100 / 5
		{"Tc compute on 5", must(gpu.Tc(compute, 5)), 20 / 9.98},
		// eq. 4: 1 / ((0.993307 + 1)(10 - 0.1 * 0.85)) * 100 / 5
		{"Tc memory on 5", must(gpu.Tc(memory, 5)), 20 / ((1 + 1/(1+math.Exp(-5))) * 9.915)},
		// eq. 17: linear below BW_max * S_p = 80 GB/s
		{"BW compute on 5", must(gpu.BW(compute, 5)), 0.5},
		// eq. 17: 90 (1 - e^(-5/2)) above it
		{"BW memory on 5", must(gpu.BW(memory, 5)), 90 * (1 - math.Exp(-2.5))},
	} {
		if !near(tc.got, tc.want) {
			t.Errorf("%s = %.9g, want %.9g", tc.name, tc.got, tc.want)
		}
	}
	if _, err := gpu.Tc(&Kernel{Name: "x", Latency: map[int]float64{5: 1}}, 5); err == nil || !strings.Contains(err.Error(), "10 SMs") {
		t.Errorf("a kernel not profiled on all SMs: %v", err)
	}
}

func must(v float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return v
}

func TestWindows(t *testing.T) {
	a := &Kernel{Name: "a", Latency: map[int]float64{1: 1}, DRAMBytes: 1e6}
	b := &Kernel{Name: "b", Latency: map[int]float64{1: 2}, DRAMBytes: 1e6}
	ws, err := Windows([]Placement{{a, 1}, {b, 1}, {b, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].End != 1 || !slices.Equal(ws[0].Running, []int{0, 1, 2}) ||
		ws[1].Start != 1 || ws[1].End != 2 || !slices.Equal(ws[1].Running, []int{1, 2}) {
		t.Errorf("windows %+v", ws)
	}
	// 1 GB/s + 0.5 + 0.5 in the first window
	if !near(ws[0].BW, 2) || !near(ws[1].BW, 1) {
		t.Errorf("window bandwidths %g %g, want 2 and 1", ws[0].BW, ws[1].BW)
	}
}

func TestPredictWithoutContention(t *testing.T) {
	// 0.5 + 70.83 GB/s < EM_BW: no penalty, I = 1; the compute kernel runs
	// 60% of its time beside the memory kernel and 40% alone.
	pred, ws, err := gpu.Predict([]Placement{{compute, 5}, {memory, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || !near(ws[0].End, 1.2) || ws[0].I != 1 {
		t.Fatalf("windows %+v", ws)
	}
	if !near(pred[0].CoRun, pred[0].Alone) || !near(pred[1].CoRun, pred[1].Alone) {
		t.Errorf("without contention the co-run is the alone time: %+v", pred)
	}
	if !slices.Equal(pred[0].Factors, []float64{1, 1}) {
		t.Errorf("factors %v", pred[0].Factors)
	}
}

func TestPredictWithContention(t *testing.T) {
	// Two memory kernels on 5 SMs each: 2 x 70.83 GB/s >= EM_BW. I(w) =
	// 141.67 / 80; Penalty_SM = 10/5/2 = 1, Penalty_access = 0.5 * 1,
	// Penalty_BW = 70.83 / 50 = 1.4167: the product 0.708 < 1, so
	// Penalties = min(1.4167, I).
	pred, _, err := gpu.Predict([]Placement{{memory, 5}, {memory, 5}})
	if err != nil {
		t.Fatal(err)
	}
	bw := 85.0 / 1.2
	iw := 2 * bw / 80
	want := must(gpu.Tc(memory, 5)) * iw * math.Min(bw/50, iw)
	for i, p := range pred {
		if !near(p.CoRun, want) {
			t.Errorf("kernel %d: %.9g, want %.9g", i, p.CoRun, want)
		}
	}
}

func TestPenaltiesBranches(t *testing.T) {
	p := Placement{memory, 2} // 60 GB/s alone: Penalty_BW = 60 / (100/2) = 1.2; Penalty_SM = 10/2/2 = 2.5
	// access share 0.5: 2.5 * 0.5 * 1.2 = 1.5, between 1 and 2: returned as is
	if got := gpu.penalties(p, 2, 1, 2, 4, 4, 2, 1.3); !near(got, 1.5) {
		t.Errorf("middle branch: %g, want 1.5", got)
	}
	// access share 0.8: 2.4 >= 2: max penalty density 4/2/4 = 0.5
	if got := gpu.penalties(p, 2, 1, 4, 5, 4, 2, 1.3); !near(got, 0.5) {
		t.Errorf("density branch: %g, want 0.5", got)
	}
	// access share 0.1: 0.3 < 1: min(Penalty_BW 1.2, I 1.1)
	if got := gpu.penalties(p, 2, 1, 1, 10, 4, 2, 1.1); !near(got, 1.1) {
		t.Errorf("low branch: %g, want 1.1", got)
	}
}

func TestPredictErrors(t *testing.T) {
	for _, ps := range [][]Placement{
		{{compute, 10}, {memory, 5}}, // 15 SMs of 10
		{{compute, 0}},
		{{compute, 3}}, // not profiled on 3
	} {
		if _, _, err := gpu.Predict(ps); err == nil {
			t.Errorf("%v: no error", ps)
		}
	}
}

func TestPlan(t *testing.T) {
	// The paper's eq. 8 on measured alone latencies as the predictor.
	measured := func(ps []Placement) ([]float64, error) {
		pred, _, err := gpu.PredictMeasured(ps)
		out := make([]float64, len(pred))
		for i, p := range pred {
			out[i] = p.CoRun
		}
		return out, err
	}
	// compute alone: 2 ms on 5 SMs, 1 on 10. A deadline of 2.5 ms fits on 5.
	sms, pred, err := Plan(gpu, []*Kernel{compute}, []float64{2.5}, measured)
	if err != nil || sms[0] != 5 || pred[0] > 2.5 {
		t.Errorf("one kernel: %v %+v %v", sms, pred, err)
	}
	// two memory kernels of 1.5 ms each: alone they fit on 5 SMs (1.2 ms),
	// together they interfere (2.54 ms each, TestPredictWithContention) and
	// 10 SMs cannot hold both on more.
	_, _, err = Plan(gpu, []*Kernel{memory, memory}, []float64{1.5, 1.5}, measured)
	if !errors.Is(err, ErrNoPlacement) {
		t.Errorf("two memory kernels: %v, want no placement", err)
	}
	if _, _, err := Plan(gpu, []*Kernel{compute}, []float64{0.5}, measured); !errors.Is(err, ErrNoPlacement) || !strings.Contains(err.Error(), "alone") {
		t.Errorf("a deadline beyond the whole GPU: %v", err)
	}
	// compute with a loose deadline beside memory: each on its least size.
	sms, _, err = Plan(gpu, []*Kernel{compute, memory}, []float64{10, 10}, measured)
	if err != nil || sms[0] != 5 || sms[1] != 2 {
		t.Errorf("loose deadlines: %v %v, want [5 2]", sms, err)
	}
}
