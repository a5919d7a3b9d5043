// Slicing (shim/slice.c) on the virtual clock: a BE tenant with a slice
// length cuts its long kernels into pieces while an LS tenant is active.
// The fake driver's test functions (1-16) run the blocks their descriptor
// says, [S, GRID_WIDTH), S from the copy the descriptor's code address
// points at, and count each block run; a launch takes its share of the
// kernel time ("dur") by the blocks it ran. One block of each is resident
// an SM, so a wave of blocks is as many as the BE's partition has SMs:
// pieces are whole waves.

package shimtest_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

const (
	us         = time.Microsecond
	slicePiece = 200 * us
	sliceWave  = allLiveSMs    // blocks of a wave: one an SM of the BE's partition
	sliceGrid  = 5 * sliceWave // a 1 ms kernel's 5 pieces of 200 us are a wave each
)

// sliceBE starts a BE tenant that cuts kernels into pieces of slicePiece,
// with tide's settings tide (its node and slice set here).
func sliceBE(t testing.TB, c *shimtest.Clock, dir string, tide ctl.Tide) *vproc {
	tide.Slice = slicePiece
	be, _ := beOn(t, c, dir, tide)
	return be
}

// busyBE starts a BE tenant that cuts at slicePiece (share 1), its
// kernels 1 ms long, beside an LS tenant that is busy.
func busyBE(t testing.TB) *vproc {
	dir, _, c, ls := lsOnClock(t)
	ls.set(true)
	be := sliceBE(t, c, dir, ctl.Tide{Share: 1})
	be.say(t, "dur 1000")
	return be
}

// runs is what the fake says of test function fn's grid of sliceGrid
// blocks: the fewest and most times a block ran, the driver's launches of
// fn, and launches or copies it found wrong.
type runs struct{ min, max, launches, bad int }

func (v *vproc) runs(t testing.TB, fn int) runs {
	t.Helper()
	got := v.say(t, fmt.Sprintf("runs %d %d", fn, sliceGrid))
	var r runs
	if _, err := fmt.Sscanf(got, "runs %d %d %d %d", &r.min, &r.max, &r.launches, &r.bad); err != nil {
		t.Fatalf("runs: %q", got)
	}
	return r
}

// launch makes n launches of test function fn by entry and fails on an
// error.
func (v *vproc) launch(t testing.TB, fn, n int, entry string) {
	t.Helper()
	if got := v.say(t, fmt.Sprintf("fl %d %d %d %s", fn, sliceGrid, n, entry)); got != "rc 0" {
		t.Fatalf("%d launches of function %d by %s: %q", n, fn, entry, got)
	}
}

// learn has the tenant launch fn once and wait for it, so that the
// shim knows its code and has timed it.
func (v *vproc) learn(t testing.TB, fn int, entry string) {
	t.Helper()
	v.launch(t, fn, 1, entry)
	v.say(t, "sync")
}

// kernels are the GPU times of test function fn's last launches.
func (v *vproc) kernels(t testing.TB, fn int) [][2]time.Duration {
	t.Helper()
	f := strings.Fields(v.say(t, fmt.Sprintf("kernels %d", fn)))
	if len(f) < 2 || f[0] != "kernels" {
		t.Fatalf("kernels: %q", f)
	}
	var out [][2]time.Duration
	for i := 2; i+1 < len(f); i += 2 {
		a, err1 := strconv.ParseInt(f[i], 10, 64)
		b, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("kernels: %q", f)
		}
		out = append(out, [2]time.Duration{time.Duration(a), time.Duration(b)})
	}
	return out
}

// wantRuns checks that every block of fn ran each times, and that the
// driver got launches of it.
func wantRuns(t *testing.T, v *vproc, fn, each, launches int, what string) {
	t.Helper()
	if r := v.runs(t, fn); r != (runs{each, each, launches, 0}) {
		t.Errorf("%s: blocks ran %d to %d times, %d driver launches, %d wrong; want each block %d times in %d launches, none wrong",
			what, r.min, r.max, r.launches, r.bad, each, launches)
	}
}

// TestSliceEveryBlockOnce: while an LS tenant is busy, a BE's kernel of
// 1 ms goes as 5 pieces of 200 us, and every block of every launch runs
// exactly once; the block says how many were cut; with the block's slice
// set to 0, launches go whole again.
func TestSliceEveryBlockOnce(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	ls.set(true)
	be, h := beOn(t, c, dir, ctl.Tide{Share: 1, Slice: slicePiece})
	be.say(t, "dur 1000")
	be.learn(t, 1, "kernel") // whole: its code is recorded, its time measured
	be.launch(t, 1, 10, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 11, 1+10*5, "10 launches of a 1 ms kernel cut into 200 us pieces")
	if s := h.Snapshot().TideStatus; s.Sliced != 10 || s.SlicePieces != 50 {
		t.Errorf("the block says %d launches cut into %d pieces, want 10 into 50", s.Sliced, s.SlicePieces)
	}
	// the pieces' lengths: the last 5 kernels of the GPU are 200 us each
	ks := be.kernels(t, 1)
	for _, k := range ks[len(ks)-5:] {
		if d := k[1] - k[0]; d != slicePiece {
			t.Errorf("a piece took %v on the GPU, want %v (pieces: %v)", d, slicePiece, ks[len(ks)-5:])
		}
	}
	// through cuLaunchKernelEx too
	be.learn(t, 7, "ex")
	be.launch(t, 7, 3, "ex")
	be.say(t, "sync")
	wantRuns(t, be, 7, 4, 1+3*5, "cuLaunchKernelEx")
	// slicing turned off in the block (as carve set would): whole from the
	// next launch on
	h.SetTide(ctl.Tide{Share: 1})
	be.launch(t, 1, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 13, 51+2, "slicing turned off")
}

// TestSliceOnlyWhileActiveAndLong: no piece without an active LS tenant
// (nor is anything recorded or timed then: the first launches once one is
// active go whole, measured), nor for a kernel no longer than the bound;
// once an LS tenant is active, the long kernel is cut, until it has been
// quiet for a second.
func TestSliceOnlyWhileActiveAndLong(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	be := sliceBE(t, c, dir, ctl.Tide{Share: 1})
	be.say(t, "dur 1000")
	be.learn(t, 1, "kernel")
	be.launch(t, 1, 4, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 5, 5, "no LS tenant has been active: whole")
	ls.set(true)
	be.say(t, "dur 200")
	be.learn(t, 2, "kernel")
	be.launch(t, 2, 4, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 2, 5, 5, "a kernel of 200 us, the bound: whole")
	be.say(t, "dur 1000")
	be.learn(t, 1, "kernel") // its first launch while an LS tenant is active: whole, measured
	be.launch(t, 1, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 8, 6+2*5, "the 1 ms kernel once an LS tenant is busy: cut")
	ls.set(false)
	be.launch(t, 1, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 10, 16+2*5, "the LS tenant served a request within a second: still active, cut")
	c.RunFor(ctl.NodeQuiet)
	be.launch(t, 1, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 12, 26+2, "the LS tenant quiet for a second: whole")
}

// TestSliceKeepsWhole: launches that cannot be cut go whole while an LS
// tenant is busy: a cluster attribute, a cooperative launch, a function
// with compile-time cluster dimensions (5), one whose code has no end
// marker (6); beside one of the same length that is cut.
func TestSliceKeepsWhole(t *testing.T) {
	be := busyBE(t)
	for _, tc := range []struct {
		fn     int
		entry  string
		pieces int
		what   string
	}{
		{3, "cluster", 1, "a launch with a cluster attribute"},
		{4, "coop", 1, "a cooperative launch"},
		{5, "kernel", 1, "a function with compile-time cluster dimensions"},
		{6, "kernel", 1, "a function whose code has no end marker"},
		{8, "kernel", 5, "a plain function"},
	} {
		be.learn(t, tc.fn, tc.entry)
		be.launch(t, tc.fn, 3, tc.entry)
		be.say(t, "sync")
		wantRuns(t, be, tc.fn, 4, 1+3*tc.pieces, tc.what)
	}
}

// TestSliceWholeWaves: pieces are whole waves of blocks (those resident
// at once on the partition's SMs), since a piece of part of a wave takes
// the wave's time: a 1 ms grid of one wave goes whole, one of two waves
// in two pieces, however long, and stays so as its pieces are timed; a
// grid of two and a half waves goes as three, the last the half wave; a
// grid of several rows is cut on whole columns of whole waves, and goes
// whole where its columns' waves would add up to more than its own.
func TestSliceWholeWaves(t *testing.T) {
	be := busyBE(t)
	for _, tc := range []struct {
		fn, grid, rows, launches, pieces int
		what                             string
	}{
		{14, sliceWave, 1, 3, 1, "a grid of one wave"},
		{16, 2 * sliceWave, 1, 40, 2, "a grid of two waves"}, // past a launch timed in 32
		{12, 5 * sliceWave / 2, 1, 3, 3, "a grid of two and a half waves"},
		// a wave is 2 columns of 12 rows: the grid is 5 waves (one, had the
		// rows not counted)
		{10, 10, 12, 3, 5, "a grid of 10 columns of 12 rows"},
		// 3 columns of 13 rows are 2 waves; cut, each column would be one
		{9, 3, 13, 3, 1, "a grid of 3 columns of 13 rows"},
	} {
		fl := func(k int) {
			if got := be.say(t, fmt.Sprintf("fl %d %d %d kernel %d", tc.fn, tc.grid, k, tc.rows)); got != "rc 0" {
				t.Fatalf("%s: %q", tc.what, got)
			}
			be.say(t, "sync")
		}
		fl(1)
		fl(tc.launches)
		// runs: the fewest and most times a block ran, driver launches, wrong
		got := be.say(t, fmt.Sprintf("runs %d %d", tc.fn, tc.grid))
		if want := fmt.Sprintf("runs %d %d %d 0", 1+tc.launches, 1+tc.launches, 1+tc.launches*tc.pieces); got != want {
			t.Errorf("%s, %d launches of 1 ms: %q, want %q (%d pieces each after the first)", tc.what, 1+tc.launches, got, want, tc.pieces)
		}
	}
	// the last piece of function 12's last launch is the half wave's 12
	// columns (the fake takes time by columns run: 200 us of the 1 ms
	// grid's 60)
	ks := be.kernels(t, 12)
	if d := ks[len(ks)-1][1] - ks[len(ks)-1][0]; d != 200*us {
		t.Errorf("the last piece of 2.5 waves took %v, want 200us (12 of the 1 ms grid's 60 columns)", d)
	}
}

// TestSliceLSWaitsOnePiece: with no share, an LS request that arrives
// while a sliced BE kernel runs waits for the BE's work already on the
// GPU alone: every piece that runs while the LS tenant is busy ends
// within one piece plus the BE's queue bound of the request's arrival
// (one piece with --inflight 1; 200 us + 300 us with the default queue of
// 8 launches and 300 us), and the rest wait until it is done. Unsliced,
// the 1 ms kernel would hold it for up to 1 ms more.
func TestSliceLSWaitsOnePiece(t *testing.T) {
	for _, tc := range []struct {
		name string
		tide ctl.Tide
		wait time.Duration
	}{
		{"inflight 1", ctl.Tide{InflightMax: 1}, slicePiece},
		{"default queue", ctl.Tide{InflightMax: ctl.DefaultPolicy.Inflight, Queue: ctl.DefaultPolicy.Queue},
			slicePiece + ctl.DefaultPolicy.Queue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, c, ls := lsOnClock(t)
			ls.serve(ms) // active: served a request
			be := sliceBE(t, c, dir, tc.tide)
			be.say(t, "dur 1000")
			be.learn(t, 1, "kernel")
			start := c.Now()
			arrive, leave := start+1450*us, start+4*ms
			ls.at(arrive, true)
			ls.at(leave, false)
			be.launch(t, 1, 3, "kernel")
			be.say(t, "sync")
			wantRuns(t, be, 1, 4, 1+3*5, "a 1 ms kernel cut while the LS tenant is active")
			ks := be.kernels(t, 1)
			if len(ks) < 15 {
				t.Fatalf("the GPU ran %d kernels of function 1, want its 15 pieces", len(ks))
			}
			ks = ks[len(ks)-15:]
			after := 0
			for _, k := range ks {
				switch {
				case k[0] < leave && k[1] > arrive+tc.wait:
					t.Errorf("a piece ran from %v to %v, while the LS tenant was busy (%v to %v): past %v after the request",
						k[0]-start, k[1]-start, arrive-start, leave-start, tc.wait)
				case k[0] >= leave:
					after++
				}
			}
			if after == 0 {
				t.Errorf("no piece ran after the LS tenant was done: it never held the kernel back (pieces %v)", ks)
			}
		})
	}
}

// TestSliceHolderDies: an LS tenant that goes busy mid-kernel and dies
// (its heartbeat stops) holds the remaining pieces back for its lease
// alone; then they run, every block once.
func TestSliceHolderDies(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	ls.serve(ms)
	be := sliceBE(t, c, dir, ctl.Tide{InflightMax: 1, Epoch: time.Second})
	be.say(t, "dur 1000")
	be.learn(t, 1, "kernel")
	start := c.Now()
	died := start + 450*us
	c.At(died, func() { ls.node.busy(0, true, died) }) // busy, and never beats again
	be.launch(t, 1, 1, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 2, 1+5, "a cut kernel whose holder died")
	ks := be.kernels(t, 1)
	ks = ks[len(ks)-5:]
	var next time.Duration // the first piece to start after the holder died
	for _, k := range ks {
		if k[0] > died {
			next = k[0]
			break
		}
	}
	if next < died+ctl.NodeLease || next > died+ctl.NodeLease+slicePiece {
		t.Errorf("the first piece after the holder died started %v after, want its lease (%v) and at most a piece more (pieces from the launch: %v)",
			next-died, ctl.NodeLease, ks)
	}
}

// TestSliceManyThreads: four threads launching the same function at once
// while an LS tenant is busy: every block of every launch runs exactly
// once, and every launch is cut (its code was scanned by a launch before:
// while one thread scans, the others' launches go whole), into 5 pieces or
// more (a piece timed beside the others' pieces takes longer, never less).
func TestSliceManyThreads(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	ls.set(true)
	be, h := beOn(t, c, dir, ctl.Tide{Share: 1, Slice: slicePiece})
	be.say(t, "dur 1000")
	be.learn(t, 1, "kernel")
	be.learn(t, 1, "kernel") // cut: its code scanned
	if got := be.say(t, fmt.Sprintf("flt 1 %d 8", sliceGrid)); got != "rc 0" {
		t.Fatalf("4 threads launching: %q", got)
	}
	be.say(t, "sync")
	r := be.runs(t, 1)
	if r.min != 34 || r.max != 34 || r.bad != 0 {
		t.Errorf("4 threads x 8 launches: blocks ran %d to %d times, %d wrong; want each 34 times, none wrong", r.min, r.max, r.bad)
	}
	if s := h.Snapshot().TideStatus; s.Sliced != 33 || r.launches < 1+33*5 {
		t.Errorf("4 threads x 8 launches: %d cut, %d driver launches; want all 33 cut, each into 5 pieces or more", s.Sliced, r.launches)
	}
}

// TestSliceScansOneAtATime: four threads first cut four functions at
// once; the scans of a context share its result words, so one scans at a
// time (the fake counts a scan that overwrote another's result before it
// was read back as wrong), and every block of every launch runs once.
func TestSliceScansOneAtATime(t *testing.T) {
	be := busyBE(t)
	for fn := 1; fn <= 4; fn++ {
		be.learn(t, fn, "kernel") // known and timed, not scanned
	}
	if got := be.say(t, fmt.Sprintf("flt 1 %d 8 each", sliceGrid)); got != "rc 0" {
		t.Fatalf("4 threads launching functions 1-4: %q", got)
	}
	be.say(t, "sync")
	for fn := 1; fn <= 4; fn++ {
		if r := be.runs(t, fn); r.min != 9 || r.max != 9 || r.bad != 0 {
			t.Errorf("function %d: blocks ran %d to %d times, %d wrong; want each 9 times, none wrong", fn, r.min, r.max, r.bad)
		}
	}
}

// TestSliceCopiesAfterPieceZero: a function's code moved (its module
// unloaded and loaded again under the same handle) is found so by piece
// 0's callback before any copy is made from its old place (the fake
// counts a kernel that reads it as wrong): the launch runs its whole grid
// as piece 0, and the function is never cut again.
func TestSliceCopiesAfterPieceZero(t *testing.T) {
	be := busyBE(t)
	// a grid of two waves, 500 us a wave: learnt, then cut in two, a copy
	// of S = one wave made
	two := fmt.Sprintf("fl 13 %d 1 kernel", 2*sliceWave)
	for k := 0; k < 2; k++ {
		if got := be.say(t, two); got != "rc 0" {
			t.Fatalf("a launch of two waves: %q", got)
		}
		be.say(t, "sync")
	}
	be.say(t, "fnmove 13")
	// the whole grid needs copies of S = 2, 3 and 4 waves, not made yet
	be.launch(t, 13, 1, "kernel")
	be.launch(t, 13, 1, "kernel")
	be.say(t, "sync")
	// the first two waves' blocks ran 4 times, the others twice (whole
	// after the move)
	if r := be.runs(t, 13); r != (runs{2, 4, 1 + 2 + 2, 0}) {
		t.Errorf("function 13 cut once, then moved: blocks ran %d to %d times, %d driver launches, %d wrong; want 2 to 4 times in 5 launches (whole after the move), none wrong",
			r.min, r.max, r.launches, r.bad)
	}
}

// TestSliceWaitsForCopies: a copy made on a stream that was destroyed,
// its handle then given to a new stream, is waited for on the new one
// (the same handle is no longer the same stream): no piece starts before
// the copy it runs was written (the fake counts one that does as wrong).
func TestSliceWaitsForCopies(t *testing.T) {
	dir, _, c, ls := lsOnClock(t)
	ls.set(true)
	be := sliceBE(t, c, dir, ctl.Tide{Share: 1}) // queue unbounded: pieces go at once
	be.say(t, "dur 1000")
	be.learn(t, 15, "kernel")
	first := be.say(t, "stream new")
	// cut: copies of S = 20, 40, 60, 80 made on the stream after piece 0
	be.launch(t, 15, 1, "kernel")
	be.say(t, "stream del")
	if again := be.say(t, "stream new"); again != first {
		t.Fatalf("the new stream is %q, the destroyed one was %q: the fake no longer reuses handles", again, first)
	}
	// its piece 1 starts 200 us in, when the destroyed stream is still
	// writing that copy (after its piece 0 of 200 us, 10 us a copy)
	be.launch(t, 15, 1, "kernel")
	be.say(t, "sync")
	be.say(t, "stream del")
	wantRuns(t, be, 15, 3, 1+5+5, "a launch cut on a new stream with a destroyed one's handle")
}

// TestSliceForgetsGoneContext: a destroyed context's handle comes back
// for a new context (the fake reuses it, as drivers may), where the same
// function handle may name other code: nothing slicing knew of the old
// context is used, and the function goes whole there; functions of
// another context are still cut.
func TestSliceForgetsGoneContext(t *testing.T) {
	be := busyBE(t)
	first := be.say(t, "ctxnew 0")
	be.learn(t, 1, "kernel")
	be.launch(t, 1, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 3, 1+2*5, "in a context of its own")
	if got := be.say(t, "ctxdel"); got != "rc 0" {
		t.Fatalf("ctxdel: %q", got)
	}
	if again := be.say(t, "ctxnew 0"); again != first {
		t.Fatalf("the new context is %q, the destroyed one was %q: the fake no longer reuses handles", again, first)
	}
	be.launch(t, 1, 3, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 1, 6, 11+3, "in a new context with the destroyed one's handle")
	be.say(t, "ctx 0")
	be.learn(t, 2, "kernel")
	be.launch(t, 2, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 2, 3, 1+2*5, "in the primary context")
}

// TestSliceNotInCapture: launches into a stream being captured into a
// graph run nothing then: they are neither cut nor timed (an event would
// join the program's graph), nor taken as the function's first launch.
func TestSliceNotInCapture(t *testing.T) {
	be := busyBE(t)
	// a function never launched before, and one known (its time not read
	// yet: a launch of it now would be timed)
	be.launch(t, 9, 1, "kernel")
	for _, fn := range []int{10, 9} {
		if got := be.say(t, fmt.Sprintf("flcap %d %d 3", fn, sliceGrid)); got != "rc 0 capevents 0" {
			t.Errorf("function %d: 3 launches captured: %q, want rc 0 and no event recorded into the capture", fn, got)
		}
	}
	be.say(t, "sync")
	be.learn(t, 10, "kernel")
	for _, fn := range []int{9, 10} {
		be.launch(t, fn, 2, "kernel")
		be.say(t, "sync")
		wantRuns(t, be, fn, 3, 1+2*5, fmt.Sprintf("function %d after launches captured: the first whole, then cut", fn))
	}
}

// BenchmarkSliceLaunchCost: what a BE's launch costs the host with
// slicing off and on (no LS tenant active, so nothing is cut: the cost
// a BE pays beside an idle LS tenant), on the fake driver.
func BenchmarkSliceLaunchCost(b *testing.B) {
	for _, c := range []struct {
		name  string
		slice time.Duration
	}{{"off", 0}, {"on", slicePiece}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			tideNode(b, dir)
			p, _ := startBE(b, dir, ctl.Tide{Share: 1, Slice: c.slice})
			p.ask(b, "burst 10000 1") // warm: the function known and timed
			b.ResetTimer()
			got := p.ask(b, fmt.Sprintf("burst %d 1", b.N))
			b.StopTimer()
			ms, err := strconv.ParseFloat(strings.TrimPrefix(got, "burst "), 64)
			if err != nil {
				b.Fatalf("burst: %q", got)
			}
			b.ReportMetric(ms*1e6/float64(b.N), "ns/launch")
			p.wait(b)
		})
	}
}

// TestSliceGlobalCapture: while the program captures a graph in global
// mode (as PyTorch's torch.cuda.graph does), a launch into another stream
// makes none of slicing's own driver calls that the capture forbids (a
// query, a synchronization, a module load, an allocation: the fake
// refuses them as CUDA does, which would end the capture): it goes
// whole, and is cut again once the capture ended.
func TestSliceGlobalCapture(t *testing.T) {
	be := busyBE(t)
	// function 11's code recorded, its time not read yet (a pair pending):
	// its next launch would read it, scan the code, set up the context
	be.launch(t, 11, 1, "kernel")
	if got := be.say(t, "gcap on"); got != "rc 0 unsafe 0" {
		t.Fatalf("gcap on: %q", got)
	}
	be.launch(t, 11, 2, "kernel")
	be.launch(t, 12, 1, "kernel")
	if got := be.say(t, "gcap off"); got != "rc 0 unsafe 0" {
		t.Errorf("launches beside a global-mode capture: %q, want rc 0 and no call refused for the capture", got)
	}
	be.say(t, "sync")
	wantRuns(t, be, 11, 3, 3, "function 11 beside a global-mode capture: whole")
	be.launch(t, 11, 2, "kernel")
	be.say(t, "sync")
	wantRuns(t, be, 11, 5, 3+2*5, "function 11 after the capture: cut")
}

// TestSliceCopiesCharged: the memory of the copies of code is the
// tenant's, charged to its account (--mem) with its scan buffer; where the
// limit leaves no room for it, the launch goes whole and no refusal is
// counted against the tenant (it asked for nothing).
func TestSliceCopiesCharged(t *testing.T) {
	for _, tc := range []struct {
		limit, used uint64
		pieces      int
	}{{64 * mib, 4*mib + 8, 5}, {2 * mib, 8, 1}} {
		t.Run(fmt.Sprint("limit ", tc.limit), func(t *testing.T) {
			dir, _, c, ls := lsOnClock(t)
			ls.set(true)
			be, h := startOn(t, c, dir, "BE", ctl.Init{Class: ctl.ClassBE, MemLimit: tc.limit, Tide: ctl.Tide{Share: 1, Slice: slicePiece}, Parts: []ctl.Part{{Mask: allLive, Live: live, SMs: allLiveSMs, Node: "node-test"}}})
			be.say(t, "dur 1000")
			be.learn(t, 1, "kernel")
			be.launch(t, 1, 1, "kernel")
			be.say(t, "sync")
			wantRuns(t, be, 1, 2, 1+tc.pieces, "a 1 ms kernel under a memory limit")
			if m := h.Snapshot().Memory; m.Used != tc.used || m.Refused != 0 {
				t.Errorf("memory used %d, refused %d times; want %d (the copies' chunk and the scan's words, where they fit), none refused",
					m.Used, m.Refused, tc.used)
			}
		})
	}
}

// TestSliceTimesFew: a function's launches are timed until a few times are
// read or on their way, then one in 32: 64 launches in a row, none of
// their pairs read meanwhile, record that many pairs (two events each),
// not one a launch.
func TestSliceTimesFew(t *testing.T) {
	be := busyBE(t)
	records := func() int { // the fake's count of cuEventRecord calls
		_, line := be.calls(t)
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "cuEventRecord="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		return 0
	}
	before := records()
	be.launch(t, 14, 64, "kernel") // one wave: never cut, timed whole
	got := records() - before
	be.say(t, "sync")
	// 3 pairs, then one in 32, and tide's own event or two (it marks its
	// queue now and then)
	if want := 2*(3+64/32) + 2; got == 0 || got > want {
		t.Errorf("64 launches recorded %d events, want some and %d at most (3 pairs, then one in 32, and tide's few)", got, want)
	}
}
