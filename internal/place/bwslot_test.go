// Tests of bwslot.go: the slots of a GPU's tenants with a bandwidth share
// are apart, packed in order of placement with holes reused, shares over
// 1 are refused, and concurrent placements get slots apart.

package place

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestBWSlots: tenants with shares get slots apart, packed from the
// epoch's start; shares that would add up to more than 1 (strict ones,
// or all) are refused, naming who holds the rest; a tenant that ended
// leaves its slot to the next; a tenant with no share takes none.
func TestBWSlots(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	procs := sleepers(t, 8)
	place := func(i int, bw float64, strict bool) (time.Duration, error) {
		t.Helper()
		p, err := Place(dir, top, Request{Spec: count(t, "1"), PID: procs[i].Process.Pid, Comm: []string{"t"},
			Policy: ctl.Policy{BW: bw, BWStrict: strict}})
		if err != nil {
			return 0, err
		}
		s := p.Block.Snapshot()
		p.Block.Close()
		if got := ctl.BWSlot(bw, ctl.BWEpoch); bw > 0 && (s.BW.Len != got || s.BW.Epoch != ctl.BWEpoch || s.BW.Strict != strict) {
			t.Errorf("tenant %d's block says %+v, want a slot of %v of %v, strict %v", i, s.BW, got, ctl.BWEpoch, strict)
		}
		return s.BWOff, nil
	}
	want := func(i int, bw float64, strict bool, off time.Duration) {
		t.Helper()
		got, err := place(i, bw, strict)
		if err != nil || got != off {
			t.Errorf("tenant %d (share %g, strict %v): slot at %v (%v), want at %v", i, bw, strict, got, err, off)
		}
	}
	refused := func(i int, bw float64, strict bool, why string) {
		t.Helper()
		if _, err := place(i, bw, strict); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("tenant %d (share %g, strict %v): %v, want refused: %q", i, bw, strict, err, why)
		}
	}
	ms := time.Millisecond
	want(0, 0.5, true, 0)
	want(1, 0.25, false, ms)
	want(2, 0, false, 0) // no share, no slot
	refused(3, 0.5, true, "bandwidth shares on the GPU would add up to 1.25, over 1")
	want(3, 0.25, true, 3*ms/2)
	refused(4, 0.25, false, "would add up to 1.25")
	procs[1].Process.Kill() // its slot is free again
	procs[1].Wait()
	refused(4, 0.5, true, "strict bandwidth shares on the GPU would add up to 1.25, over 1")
	want(4, 0.125, false, ms)
	want(5, 0.125, false, ms+ms/4)
}

// TestConcurrentBWSlots: 20 processes with a share of 0.05 each place
// themselves at once: each gets a slot of 100 us, none shared, and the 20
// fill the epoch; a 21st is refused.
func TestConcurrentBWSlots(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	for _, l := range placeConcurrently(t, dir, "1", 20, "PLACE_BW=0.05") {
		if !strings.HasPrefix(l, "placed ") {
			t.Fatalf("a placement failed: %q", l)
		}
	}
	holders, err := Holders(dir, top)
	if err != nil {
		t.Fatal(err)
	}
	var offs []time.Duration
	for _, h := range holders {
		if h.BW.Len != 100*time.Microsecond {
			t.Errorf("%s: slot %+v, want 100us", h, h.BW)
		}
		offs = append(offs, h.BWOff)
	}
	slices.Sort(offs)
	for i, off := range offs {
		if want := time.Duration(i) * 100 * time.Microsecond; off != want {
			t.Errorf("slots start at %v, want every 100us from 0", offs)
			break
		}
	}
	if len(offs) != 20 {
		t.Errorf("%d slots, want 20", len(offs))
	}
	if l := placeConcurrently(t, dir, "1", 1, "PLACE_BW=0.05")[0]; !strings.Contains(l, "refused") || !strings.Contains(l, "over 1") {
		t.Errorf("a 21st share of 0.05: %q, want refused", l)
	}
}

// TestBWSlotsOfNoEpoch: slots a block says that are none of the epoch
// (before it, past it, of no length, or of a share out of range, as a
// block cut short or written by hand may say) are ignored, with no
// overflow of their sums: the next share is placed from the epoch's start.
func TestBWSlotsOfNoEpoch(t *testing.T) {
	odd := []bwSlot{{off: math.MaxInt64, len: math.MaxInt64, share: 0.5}, {off: -time.Millisecond, len: time.Millisecond, share: 0.5},
		{off: 0, len: 0, share: 0.5}, {off: 0, len: ctl.BWEpoch, share: math.NaN()}, {off: ctl.BWEpoch / 2, len: ctl.BWEpoch, share: 0.5}}
	if off, err := chooseBWSlot(0.5, true, odd); err != nil || off != 0 {
		t.Errorf("beside slots of no epoch: %v, %v; want placed at 0", off, err)
	}
	if off, err := chooseBWSlot(0.5, false, append(odd, bwSlot{off: 0, len: ctl.BWEpoch / 2, share: 0.5})); err != nil || off != ctl.BWEpoch/2 {
		t.Errorf("beside one real slot of the first half: %v, %v; want placed at %v", off, err, ctl.BWEpoch/2)
	}
}
