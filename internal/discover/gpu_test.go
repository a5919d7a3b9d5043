// Tests of gpu.go on a real GPU: a fresh discovery matches the recording,
// and kernels launched under a partition's mask run on its SMs only.

package discover

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/carve-gpu/carve/internal/gputest"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// TestGPUDiscoveryMatchesRecording: a fresh discovery finds the live bits and
// SMs recorded in testdata (run on the GPU the recording came from).
func TestGPUDiscoveryMatchesRecording(t *testing.T) {
	gputest.Need(t)
	got, err := DiscoverGPU(0, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := topotest.H100(t)
	if got.Device != want.Device {
		t.Skipf("recording is of an %s, this GPU is an %s", want.Device, got.Device)
	}
	// every H100 SXM lent so far had the same floorsweeping; another may not
	t.Logf("recorded on %s, running on %s", want.UUID, got.UUID)
	if got.Live() != want.Live() || len(got.GPCs) != len(want.GPCs) {
		t.Fatalf("live %v in %d GPCs, recorded %v in %d", got.Live(), len(got.GPCs), want.Live(), len(want.GPCs))
	}
	t.Logf("discovery took %.0f ms: %s", got.DiscoveryMS, got.Summary())
}

// TestGPUMaskConfinesBlocks: kernels launched under a partition's mask run on
// exactly that partition's SMs, for partitions of every shape, on the
// topology discovered on this GPU (of whatever model: two GPUs of one
// model may differ in which TPCs are live, and a mask of dead ones would
// hang the kernel).
func TestGPUMaskConfinesBlocks(t *testing.T) {
	gputest.Need(t)
	g, err := OpenGPU(0)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := topo.Discover(g, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &topo.Topology{}
	rec.Place(lay)
	if err := rec.Validate(); err != nil {
		t.Fatal(err)
	}
	last := len(rec.TPCs) - 1
	r := rand.New(rand.NewPCG(1, 2))
	sets := [][]int{{0}, {last}, {0, 1, 2, 3}, rec.GPCs[min(2, len(rec.GPCs)-1)].TPCs}
	for _, n := range []int{2, 7, 20, 33, last} {
		sets = append(sets, r.Perm(len(rec.TPCs))[:n])
	}
	for _, set := range sets {
		var enable topo.Enable
		want := map[int]bool{}
		for _, i := range set {
			enable = enable.Set(rec.TPCs[i].Bit)
			for _, sm := range rec.TPCs[i].SMs {
				want[sm] = true
			}
		}
		dis := enable.Disable()
		sms, err := g.Run(&dis, 4*g.SMCount(), 0)
		if err != nil {
			t.Fatalf("TPCs %v: %v", set, err)
		}
		got := map[int]bool{}
		for _, sm := range sms {
			got[sm] = true
		}
		var outside []int
		for sm := range got {
			if !want[sm] {
				outside = append(outside, sm)
			}
		}
		sort.Ints(outside)
		if len(outside) > 0 || len(got) != len(want) {
			t.Errorf("TPCs %v: blocks ran on %d SMs (outside the partition: %v), partition has %d", set, len(got), outside, len(want))
		}
	}
}
