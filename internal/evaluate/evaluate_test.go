// Tests of evaluate.go: an evaluation repredicted with carve's model, saved
// and loaded again.

package evaluate

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/carve-gpu/carve/internal/model"
)

func TestRepredictSaveLoad(t *testing.T) {
	// Two kernels on a four-SM GPU: mem pulls 80 GB/s on 2 SMs.
	ks := map[string]*model.Kernel{
		"mem": {Name: "mem", Latency: map[int]float64{2: 1, 4: 0.8}, DRAMBytes: 80e6, L2Accesses: 1e5, Instructions: 1e7},
		"cpu": {Name: "cpu", Latency: map[int]float64{2: 2, 4: 1}, DRAMBytes: 1e6, L2Accesses: 1e3, Instructions: 1e9},
	}
	g := model.GPU{N: 4, BWMax: 120, EMBW: 100, Sp: 1, Alpha: 100, SharedBW: 100}
	e := &Evaluation{Device: "test GPU", Groups: [][]Run{
		{{Member: model.Member{Kernel: "mem", TPCs: 1}, SMs: 2, Measured: 1.1}, {Member: model.Member{Kernel: "cpu", TPCs: 1}, SMs: 2, Measured: 2}},
		{{Member: model.Member{Kernel: "mem", TPCs: 1}, SMs: 2, Measured: 1.7}, {Member: model.Member{Kernel: "mem", TPCs: 1}, SMs: 2, Measured: 1.5}},
	}}
	if err := e.Repredict(g, ks); err != nil {
		t.Fatal(err)
	}
	// carve's model: mem beside cpu needs 81 GB/s < 100: 1 ms; two mems
	// need 160 GB/s: both slowed 1.6x.
	want := map[[2]int]float64{{0, 0}: 1, {0, 1}: 2, {1, 0}: 1.6, {1, 1}: 1.6}
	for k, v := range want {
		if got := e.Groups[k[0]][k[1]].Predicted["carve"]; math.Abs(got-v) > 1e-9 {
			t.Errorf("group %d run %d: carve predicts %g, want %g", k[0], k[1], got, v)
		}
	}
	var carve model.ErrorSummary
	for _, s := range e.Summary {
		if s.Model == "carve" {
			carve = s
		}
	}
	// errors: -0.1/1.1, 0, -0.1/1.7, +0.1/1.5
	mae := (0.1/1.1 + 0.1/1.7 + 0.1/1.5) / 4
	if carve.N != 4 || math.Abs(carve.MAE-mae) > 1e-9 || carve.Over != 1 || carve.Under != 2 {
		t.Errorf("carve summary %+v, want MAE %g, 1 over, 2 under", carve, mae)
	}
	dir := t.TempDir()
	path, err := e.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil || len(back.Groups) != 2 || back.Groups[1][0].Predicted["carve"] != e.Groups[1][0].Predicted["carve"] {
		t.Fatalf("round trip: %v", err)
	}
	for _, f := range []string{"prediction.png", "prediction.svg", "error-by-size.png", "error-by-size.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	obs, err := back.Observed(ks)
	if err != nil || len(obs) != 2 || obs[1].Measured[1] != 1.5 {
		t.Errorf("observed %+v %v", obs, err)
	}
	delete(ks, "cpu")
	if _, err := back.Observed(ks); err == nil {
		t.Error("a run without a profile was accepted")
	}
}
