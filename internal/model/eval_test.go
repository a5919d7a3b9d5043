// Tests of eval.go: random co-run groups, and the summary of a model's
// errors.

package model

import (
	"math"
	"testing"
)

func TestRandomGroups(t *testing.T) {
	kernels := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	sizes := []int{11, 22, 33, 44, 55}
	gs, err := RandomGroups(1, 200, kernels, sizes, 66)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, g := range gs {
		sum, names := 0, map[string]bool{}
		for _, m := range g {
			sum += m.TPCs
			if names[m.Kernel] {
				t.Fatalf("group %v repeats %s", g, m.Kernel)
			}
			names[m.Kernel] = true
		}
		if sum > 66 || len(g) < 2 || len(g) > 6 {
			t.Fatalf("group %v: %d TPCs, %d kernels", g, sum, len(g))
		}
		seen[len(g)]++
	}
	for k := 2; k <= 6; k++ {
		if seen[k] == 0 {
			t.Errorf("no group of %d in 200 (%v)", k, seen)
		}
	}
	again, _ := RandomGroups(1, 200, kernels, sizes, 66)
	if again[17][0] != gs[17][0] || len(again[199]) != len(gs[199]) {
		t.Error("the same seed drew other groups")
	}
	if _, err := RandomGroups(1, 1, kernels, []int{40}, 66); err == nil {
		t.Error("sizes that cannot pair were accepted")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize("m", []float64{0.1, -0.3, 0.2, 0}, []int{2, 2, 3, 3})
	if s.N != 4 || math.Abs(s.MAE-0.15) > 1e-12 || math.Abs(s.Mean-0) > 1e-12 || s.Over != 2 || s.Under != 1 ||
		s.MaxOver != 0.2 || s.MaxUnd != -0.3 || s.Within20 != 3 || math.Abs(s.BySize[2]-0.2) > 1e-12 || math.Abs(s.BySize[3]-0.1) > 1e-12 {
		t.Errorf("summary %+v", s)
	}
}
