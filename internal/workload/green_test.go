// Tests of green.go: groups of SMs divided in two by share.

package workload

import (
	"testing"

	"github.com/carve-gpu/carve/internal/cuda"
)

func TestGreenShares(t *testing.T) {
	// The H100's split into the smallest groups: 15 of 8 SMs and 12 left.
	groups := make([]cuda.SMResource, 15)
	for i := range groups {
		groups[i] = cuda.FakeSMResource(8)
	}
	rest := cuda.FakeSMResource(12)
	for _, tc := range []struct {
		share  float64
		a, b   int // SMs
		bParts int
	}{
		{0.57, 72, 60, 7}, // 75.2 SMs asked: 9 groups
		{0.5, 64, 68, 8},
		{0.01, 8, 124, 15}, // at least one group
		{0.99, 112, 20, 2}, // leaves at least one group and the rest
	} {
		a, b := GreenShares(groups, rest, tc.share)
		if SMsOf(a) != tc.a || SMsOf(b) != tc.b || len(b) != tc.bParts {
			t.Errorf("share %g: %d + %d SMs in %d parts, want %d + %d in %d", tc.share, SMsOf(a), SMsOf(b), len(b), tc.a, tc.b, tc.bParts)
		}
	}
	a, b := GreenShares(groups[:2], cuda.FakeSMResource(0), 0.5)
	if SMsOf(a) != 8 || len(b) != 1 {
		t.Errorf("no rest: %d SMs and %d parts, want 8 and 1 (an empty rest is left out)", SMsOf(a), len(b))
	}
}
