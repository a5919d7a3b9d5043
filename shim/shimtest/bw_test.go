// Bandwidth shares (shim/bw.c) on the virtual clock: tenants with a
// share keep their kernels to their slots of each epoch, strict or not;
// not strict, a tenant alone takes all the time, gives a neighbour's slot
// back once the neighbour launches, keeps its own slot whatever a forged
// stamp says, and has a dead neighbour's slot again.

package shimtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// bwKernel is the tests' kernels' time: three fit a slot of half the epoch.
const bwKernel = 300 * us

// bwOn starts a tenant of no class on the clock with a share of the
// bandwidth and its slot at off, its kernels bwKernel long.
func bwOn(t testing.TB, c *shimtest.Clock, dir, name string, share float64, strict bool, off time.Duration) (*vproc, *ctl.Handle) {
	v, h := startOn(t, c, dir, name, ctl.Init{BW: ctl.BW{Share: share, Strict: strict},
		Parts: []ctl.Part{{Mask: allLive, Live: live, SMs: allLiveSMs, BWOff: off}}})
	v.say(t, fmt.Sprintf("dur %d", bwKernel/us))
	return v, h
}

// launchAll has each tenant launch n kernels of test function 1 at once,
// and waits for them all to be done: each one's kernels.
func launchAll(t *testing.T, c *shimtest.Clock, n int, vs ...*vproc) [][][2]time.Duration {
	t.Helper()
	var calls []*shimtest.Call
	for _, v := range vs {
		calls = append(calls, c.Send(v.pid, v.p.in, v.p.out, fmt.Sprintf("fl 1 %d %d", sliceGrid, n)))
	}
	for i, a := range calls {
		if got, _, err := a.Wait(askLimit); err != nil || got != "rc 0" {
			t.Fatalf("tenant %d's launches: %q, %v", i, got, err)
		}
	}
	var out [][][2]time.Duration
	for _, v := range vs {
		v.say(t, "sync")
		out = append(out, v.kernels(t, 1))
	}
	return out
}

// inSlot says whether kernel k starts in the slot at off of share of the
// epoch ctl.BWEpoch and ends by the slot's end.
func inSlot(k [2]time.Duration, share float64, off time.Duration) bool {
	e, n := ctl.BWEpoch, ctl.BWSlot(share, ctl.BWEpoch)
	pos := ((k[0]-off)%e + e) % e
	return pos < n && k[1]-(k[0]-pos) <= n
}

// TestBWStrictHalves: two strict tenants with half each, launching back to
// back at once: every kernel of each runs in its slot, so that each one's
// GPU time in any epoch is its share at most, and each still runs three
// kernels a slot once it has timed one.
func TestBWStrictHalves(t *testing.T) {
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	a, ha := bwOn(t, c, dir, "A", 0.5, true, 0)
	b, _ := bwOn(t, c, dir, "B", 0.5, true, ctl.BWEpoch/2)
	start := c.Now()
	ks := launchAll(t, c, 30, a, b)
	for i, off := range []time.Duration{0, ctl.BWEpoch / 2} {
		if len(ks[i]) != 30 {
			t.Fatalf("tenant %d ran %d kernels, want 30", i, len(ks[i]))
		}
		perEpoch := map[time.Duration]time.Duration{}
		for _, k := range ks[i] {
			if !inSlot(k, 0.5, off) {
				t.Errorf("tenant %d's kernel ran from %v to %v, outside its slot at %v of each %v", i, k[0]-start, k[1]-start, off, ctl.BWEpoch)
			}
			perEpoch[(k[0]-off)/ctl.BWEpoch] += k[1] - k[0]
		}
		for e, d := range perEpoch {
			if d > ctl.BWEpoch/2 {
				t.Errorf("tenant %d ran %v of GPU time in epoch %d, over its share (%v)", i, d, e, ctl.BWEpoch/2)
			}
		}
		// 1 kernel timed alone, then 3 a slot: 30 kernels in 11 epochs or so
		if span := ks[i][29][1] - start; span > 12*ctl.BWEpoch {
			t.Errorf("tenant %d's 30 kernels took %v, want three a slot (about %v)", i, span, 11*ctl.BWEpoch)
		}
	}
	st := ha.Snapshot().BWStatus
	if st.HeldLaunches == 0 || st.Held == 0 {
		t.Errorf("tenant A's status %+v, want launches held for its slot", st)
	}
	// its kernels' time as its gate measured it: a kernel's time for each
	// launch seen done, 27 to 30 of bwKernel (its last slot's three are
	// seen done at its next launch)
	if st.Busy < 27*bwKernel-bwKernel/2 || st.Busy > 30*bwKernel+bwKernel/2 {
		t.Errorf("tenant A's kernels measured %v by its gate, want %v to %v", st.Busy, 27*bwKernel, 30*bwKernel)
	}
}

// TestBWWorkConserving: not strict, a tenant alone takes all the time,
// its neighbour's slot too; once the neighbour launches, it keeps to its
// own slot from an epoch (and a kernel) after, and the neighbour's
// kernels run in the neighbour's slot.
func TestBWWorkConserving(t *testing.T) {
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	a, _ := bwOn(t, c, dir, "A", 0.5, false, 0)
	b, _ := bwOn(t, c, dir, "B", 0.5, false, ctl.BWEpoch/2)
	start := c.Now()
	ks := launchAll(t, c, 20, a)[0]
	if span := ks[19][1] - start; span > 20*bwKernel+bwKernel {
		t.Errorf("a tenant alone ran 20 kernels of %v in %v, want all the time (%v)", bwKernel, span, 20*bwKernel)
	}
	// A launches 60, B 10 from 6 ms on
	ca := c.Send(a.pid, a.p.in, a.p.out, fmt.Sprintf("fl 1 %d 60", sliceGrid))
	c.RunFor(6 * ms)
	from := c.Now()
	kb := launchAll(t, c, 10, b)[0]
	if got, _, err := ca.Wait(askLimit); err != nil || got != "rc 0" {
		t.Fatalf("A's launches: %q, %v", got, err)
	}
	a.say(t, "sync")
	ka := a.kernels(t, 1)
	for _, k := range kb {
		if !inSlot(k, 0.5, ctl.BWEpoch/2) {
			t.Errorf("B's kernel ran from %v to %v, outside its slot while A wants its own", k[0]-from, k[1]-from)
		}
	}
	took := 0
	for _, k := range ka {
		switch {
		case k[0] < from && !inSlot(k, 0.5, 0):
			took++
		case k[0] >= from+ctl.BWEpoch+bwKernel && k[0] < kb[len(kb)-1][1] && !inSlot(k, 0.5, 0):
			t.Errorf("A's kernel ran from %v to %v (B launching from 0 to %v), outside A's slot", k[0]-from, k[1]-from, kb[len(kb)-1][1]-from)
		}
	}
	if took == 0 {
		t.Errorf("A ran no kernel outside its slot while alone, want it to take B's slot")
	}
}

// TestBWForgedStampKeepsOwnSlot: a block that says it always wants its
// slot (a stamp far ahead, written by whoever can write that block) holds
// a tenant that is not strict to its own slot, but it keeps all of that
// slot: three kernels a slot, as a strict tenant has.
func TestBWForgedStampKeepsOwnSlot(t *testing.T) {
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	forger := exec.Command("sleep", "60") // a live pid, whose block the test writes
	if err := forger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forger.Process.Kill(); forger.Wait() })
	f, err := ctl.Create(dir, ctl.Init{PID: forger.Process.Pid, BW: ctl.BW{Share: 0.5},
		Parts: []ctl.Part{{Mask: allLive, Live: live, SMs: allLiveSMs, BWOff: ctl.BWEpoch / 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	forge(t, dir, forger.Process.Pid, uint64(time.Hour+shimtest.ClockStart))
	a, _ := bwOn(t, c, dir, "A", 0.5, false, 0)
	start := c.Now()
	ks := launchAll(t, c, 30, a)[0]
	for _, k := range ks {
		if !inSlot(k, 0.5, 0) {
			t.Errorf("A's kernel ran from %v to %v, outside its slot beside a tenant that says it wants its own", k[0]-start, k[1]-start)
		}
	}
	if span := ks[29][1] - start; span > 12*ctl.BWEpoch {
		t.Errorf("A's 30 kernels took %v, want three a slot (about %v): a forged stamp took its own slot", span, 11*ctl.BWEpoch)
	}
}

// forge writes the stamp of the block of pid in dir, as its owner could.
func forge(t *testing.T, dir string, pid int, want uint64) {
	t.Helper()
	fd, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(pid)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	var b [8]byte
	for i := range b {
		b[i] = byte(want >> (8 * i))
	}
	if _, err := fd.WriteAt(b[:], bwWantOffset); err != nil {
		t.Fatal(err)
	}
}

// bwWantOffset is the offset of bw_want_ns in a block.
const bwWantOffset = int64(unsafe.Offsetof(ctl.Block{}.BWWantNS))

// TestBWDeadNeighbour: a tenant that dies while it wanted its slot leaves
// it: its neighbour, not strict, takes all the time again from an epoch
// after its last stamp.
func TestBWDeadNeighbour(t *testing.T) {
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	a, _ := bwOn(t, c, dir, "A", 0.5, false, 0)
	b, _ := bwOn(t, c, dir, "B", 0.5, false, ctl.BWEpoch/2)
	launchAll(t, c, 6, a, b)
	b.p.cmd.Process.Kill()
	b.p.cmd.Wait()
	c.Release(b.pid)
	died := c.Now()
	ks := launchAll(t, c, 20, a)[0]
	for _, k := range ks {
		if k[0] >= died+ctl.BWEpoch && k[0]-k[0]%ctl.BWEpoch+ctl.BWEpoch/2 <= k[0] {
			return // one ran in the dead neighbour's slot
		}
	}
	t.Errorf("after its neighbour died, A ran no kernel in the neighbour's slot: %v", ks)
}

// TestBWAloneNoCost: a tenant that is not strict and finds no other with
// a share on its GPU runs ungated: its launches make no driver call of
// the gate's (no event; the fake counts them) and wait for nothing. A
// strict one alone still keeps to its slot, and so makes them; and once
// a neighbour with a share is there, the one not strict is gated again
// within the gate's look for peers (1 ms).
func TestBWAloneNoCost(t *testing.T) {
	const launches = 50
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	a, _ := bwOn(t, c, dir, "A", 0.5, false, 0)
	before := a.events(t)
	start := c.Now()
	launchAll(t, c, launches, a)
	if n := a.events(t) - before; n != 0 {
		t.Errorf("alone, not strict: %d launches made %d event calls, want none", launches, n)
	}
	if took := c.Now() - start; took > launches*bwKernel+bwKernel {
		t.Errorf("alone, not strict: %d kernels of %v took %v", launches, bwKernel, took)
	}

	strict, _ := bwOn(t, c, t.TempDir(), "T", 0.5, true, 0)
	before = strict.events(t)
	launchAll(t, c, 10, strict)
	if strict.events(t) == before {
		t.Errorf("alone, strict: 10 launches made no counted call: its slot not kept")
	}

	b, _ := bwOn(t, c, dir, "B", 0.5, false, ctl.BWEpoch/2)
	defer b.wait(t)
	c.RunFor(2 * ms)
	before = a.events(t)
	launchAll(t, c, 10, a)
	if a.events(t) == before {
		t.Errorf("beside a neighbour with a share, 10 launches made no counted call: still ungated")
	}
}

// events is how many of the calls the fake driver counted of v's were of
// events (cuEvent...), the gate's.
func (v *vproc) events(t testing.TB) int { return v.count(t, "cuEvent") }

// count is how many of the calls the fake driver counted of v's were of
// the functions whose names begin with prefix.
func (v *vproc) count(t testing.TB, prefix string) int {
	t.Helper()
	_, line := v.calls(t)
	n := 0
	for _, f := range strings.Fields(line) {
		var k int
		if name, count, ok := strings.Cut(f, "="); ok && strings.HasPrefix(name, prefix) {
			fmt.Sscan(count, &k)
			n += k
		}
	}
	return n
}

// TestBWRescanSameMtime: a neighbour whose block appears without moving
// the directory's mtime (a coarse timestamp: its rename within one tick
// of the last listing) is found at the next listing all the same, within
// 100 ms: the tenant alone, ungated until then, is gated after.
func TestBWRescanSameMtime(t *testing.T) {
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	a, _ := bwOn(t, c, dir, "A", 0.5, false, 0)
	launchAll(t, c, 5, a) // its first look: alone
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := bwOn(t, c, dir, "B", 0.5, false, ctl.BWEpoch/2)
	defer b.wait(t)
	if err := os.Chtimes(dir, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	c.RunFor(150 * ms)
	before := a.events(t)
	launchAll(t, c, 10, a)
	if a.events(t) == before {
		t.Errorf("150 ms after a neighbour with a share appeared (the directory's mtime unmoved), still ungated")
	}
}

// TestBWSmallKernelsFewEvents: a tenant gated beside an idle neighbour
// with a share, launching many small kernels back to back, records an
// event after about one launch in MARK (8) of a run, not after each (each
// costs about 2.5 us on a GPU), and still takes all the time; strict, the
// same kernels all run in its slot, as many a slot as fit once timed.
func TestBWSmallKernelsFewEvents(t *testing.T) {
	const launches, small = 400, 20 * us
	dir := t.TempDir()
	c := shimtest.NewClock(t, dir, 10*us)
	a, _ := bwOn(t, c, dir, "A", 0.5, false, 0)
	b, _ := bwOn(t, c, dir, "B", 0.5, false, ctl.BWEpoch/2)
	defer b.wait(t)
	a.say(t, fmt.Sprintf("dur %d", small/us))
	c.RunFor(2 * ms) // past its look for peers
	before, records := a.events(t), a.count(t, "cuEventRecord")
	start := c.Now()
	launchAll(t, c, launches, a)
	if n := a.events(t) - before; n > launches {
		t.Errorf("gated beside an idle neighbour: %d launches of %v made %d event calls, want fewer than one a launch", launches, small, n)
	}
	if n := a.count(t, "cuEventRecord") - records; n > launches/4 {
		t.Errorf("gated beside an idle neighbour: %d launches of %v recorded %d events, want about one a %d", launches, small, n, 8)
	}
	if took := c.Now() - start; took > launches*small*11/10+ctl.BWEpoch {
		t.Errorf("gated beside an idle neighbour: %d kernels of %v took %v, want all the time (%v)", launches, small, took, launches*small)
	}

	sdir := t.TempDir()
	s, _ := bwOn(t, c, sdir, "S", 0.5, true, 0)
	s.say(t, fmt.Sprintf("dur %d", small/us))
	launchAll(t, c, 5, s) // its kernels timed
	start = c.Now()
	ks := launchAll(t, c, launches, s)[0]
	for _, k := range ks {
		if !inSlot(k, 0.5, 0) {
			t.Fatalf("strict: a kernel ran from %v to %v, outside its slot", k[0]-start, k[1]-start)
		}
	}
	// 50 kernels of 20 us fill a slot of 1 ms: 400 in 8 slots
	if span := ks[len(ks)-1][1] - start; span > 10*ctl.BWEpoch {
		t.Errorf("strict: %d kernels of %v took %v, want about %d a slot (%v)", launches, small, span, int(ctl.BWEpoch/2/small), 8*ctl.BWEpoch)
	}
}
