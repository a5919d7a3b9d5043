// Tests of gemm.go's CPU reference and relative error.

package workload

import "testing"

func TestMulCPUAndRelErr(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	b := []float32{5, 6, 7, 8}
	want := []float64{19, 22, 43, 50}
	got := MulCPU(2, a, b)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MulCPU = %v", got)
		}
	}
	if e := RelErr([]float32{19, 22, 43, 50}, want); e != 0 {
		t.Errorf("exact: %g", e)
	}
	if e := RelErr([]float32{19, 22, 43, 51}, want); e < 1e-3 {
		t.Errorf("off by one: %g", e)
	}
	nan := float32(0)
	nan = nan / nan
	if e := RelErr([]float32{nan, 22, 43, 50}, want); e < 1 {
		t.Errorf("NaN passes: %g", e)
	}
}
