// Tests of topotest.go: the second GPU is the first with four of its TPCs
// dead, its logical TPCs from the first dead one on at other mask bits.

package topotest_test

import (
	"testing"

	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// TestSecondDiffers: the second GPU has the first's model and TPCs but
// four, which are dead on it, and a logical TPC names another mask bit
// there from the first dead one on.
func TestSecondDiffers(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	if len(b.TPCs) != len(a.TPCs)-4 || b.SMCount != a.SMCount-8 || b.UUID == a.UUID || b.Device != a.Device {
		t.Fatalf("second GPU: %d TPCs, %d SMs, %s; first: %d, %d, %s", len(b.TPCs), b.SMCount, b.UUID, len(a.TPCs), a.SMCount, a.UUID)
	}
	if a.Live().And(b.Live()) != b.Live() || a.Live() == b.Live() {
		t.Errorf("live bits: %v of %v", b.Live(), a.Live())
	}
	if a.TPCs[5].Bit == b.TPCs[5].Bit {
		t.Errorf("logical TPC 5 is bit %d on both: want the dead bit 10 to shift it", a.TPCs[5].Bit)
	}
}
