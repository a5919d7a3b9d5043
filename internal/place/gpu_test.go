// Tests that blocks and claims' reservations name the GPU their masks
// are of.

package place

import (
	"os"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestBlocksNameTheirGPU: a placed partition's block and a claim's
// reservation name the GPU their masks are of, for the shim to write them
// into launches on that GPU only.
func TestBlocksNameTheirGPU(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	p, err := Place(dir, top, Request{Spec: count(t, "10"), PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Block.Close()
	if got := p.Block.Snapshot().GPU; got != top.UUID || got == "" {
		t.Errorf("a placed partition's block names GPU %q, want %q", got, top.UUID)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "c", Name: "ns/c"}, Spec: count(t, "10")}); err != nil {
		t.Fatal(err)
	}
	claims, _, err := ctl.Claims(dir)
	if err != nil || len(claims) != 1 || claims[0].Root.GPU != top.UUID {
		t.Errorf("claims %+v %v: want the reservation to name GPU %s", claims, err, top.UUID)
	}
}
