// An LS tenant's poller (shim/tide_ls.c) beside stream captures: it never
// queries a stream that a capture has begun on, however the begin and its
// looks interleave; its busy periods, all and alone, in its block's
// histograms, alone as every BE file of the GPU says.

package shimtest_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// TestCaptureBeginNeverQueried: a stream with work not yet known done is
// captured (in global mode, as PyTorch's graphs are) while the LS
// tenant's poller looks at every step; the fake's begin is held 1 ms on
// the clock once the stream is capturing, where a query of the stream
// would spoil the capture (as the driver's does: its end fails). The
// capture survives: the shim counts it before the driver's begin, under
// the lock the poller holds from its look at the count to its queries.
func TestCaptureBeginNeverQueried(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 10*us)
	p, _ := lsOn(t, c, dir)
	p.say(t, "dur 20000") // the stream's kernel runs 20 ms: the tenant stays busy, the poller looking
	got, d := p.ask(t, "capwin 1000")
	if got != "rc 0" {
		t.Fatalf("capture of a stream with work beside the poller: %q, want rc 0 (901: the poller spoiled it)", got)
	}
	if d < time.Millisecond {
		t.Errorf("the capture's begin took %v, want the 1 ms the fake held it", d)
	}
	if s, ok := busyOf(n, p.pid); !ok || !s.Busy {
		t.Errorf("after the capture, while the kernel runs: slot %+v (found %v), want busy", s, ok)
	}
	// once the capture is over, the poller finds the work done
	c.RunFor(20 * ms)
	c.Settle()
	if s, _ := busyOf(n, p.pid); s.Busy {
		t.Errorf("after the kernel: %+v, want idle", s)
	}
}

// period has the LS tenant p serve one request of a kernel of d (a
// multiple of the clock's step) and waits for the poller to find it done.
func period(t *testing.T, c *shimtest.Clock, p *vproc, d time.Duration) {
	t.Helper()
	p.say(t, fmt.Sprintf("dur %d", d/time.Microsecond))
	p.say(t, "klaunch kernel")
	c.RunFor(d)
	c.Settle()
}

// histOf is a histogram of the periods ds, as the shim counts them.
func histOf(ds ...time.Duration) ctl.Hist {
	var h ctl.Hist
	for _, d := range ds {
		i := 0
		for i < ctl.HistBuckets-1 && d >= ctl.HistBound(i) {
			i++
		}
		h.Counts[i]++
		h.Sum += d
	}
	return h
}

// TestLSBusyPeriods: an LS tenant's requests of 3 and 7 ms, alone on the
// GPU, are busy periods of exactly that in its block's histograms, all
// and alone; one of 20 ms just after a BE tenant launched counts in all
// alone; one of 5 ms a second after the BE's last launch is alone again.
func TestLSBusyPeriods(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	p, h := lsOn(t, c, dir)
	period(t, c, p, 3*ms)
	period(t, c, p, 7*ms)
	st := h.Snapshot().TideStatus
	if want := histOf(3*ms, 7*ms); st.Periods != want || st.Alone != want {
		t.Fatalf("after two requests alone: periods %v alone %v, want both %v", st.Periods, st.Alone, want)
	}
	be, _ := beOn(t, c, dir, ctl.Tide{})
	be.say(t, "dur 1000")
	be.say(t, "klaunch kernel")
	launched := c.Now()
	period(t, c, p, 20*ms)
	st = h.Snapshot().TideStatus
	if want := histOf(3*ms, 7*ms, 20*ms); st.Periods != want {
		t.Errorf("after a request beside a BE: periods %v, want %v", st.Periods, want)
	}
	if want := histOf(3*ms, 7*ms); st.Alone != want {
		t.Errorf("after a request beside a BE: alone %v, want %v (not the 20 ms)", st.Alone, want)
	}
	c.RunFor(launched + ctl.NodeQuiet + c.Step - c.Now())
	period(t, c, p, 5*ms)
	st = h.Snapshot().TideStatus
	if want := histOf(3*ms, 7*ms, 20*ms, 5*ms); st.Periods != want {
		t.Errorf("a second after the BE: periods %v, want %v", st.Periods, want)
	}
	if want := histOf(3*ms, 7*ms, 5*ms); st.Alone != want {
		t.Errorf("a second after the BE: alone %v, want %v", st.Alone, want)
	}
	if st.Requests != 4 || st.Busy != 35*ms {
		t.Errorf("requests %d busy %v, want 4 and 35 ms", st.Requests, st.Busy)
	}
}

// stampBE writes t into the BE file name of dir's node-test as its
// writer's latest BE launch, as a BE shim stamps it.
func stampBE(t *testing.T, dir, name string, at time.Duration) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "node-test"+ctl.NodeDirSuffix, name), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := binary.LittleEndian.AppendUint64(nil, uint64(at))
	if _, err := f.WriteAt(b, int64(unsafe.Offsetof(ctl.BEFile{}.BELaunchNS))); err != nil {
		t.Fatal(err)
	}
}

// TestLSReadsEveryBEFile: an LS tenant takes the latest BE launch of every
// BE file of the GPU's directory, one made after it first looked among
// them (listed again as the directory changed): a period just after a
// stamp there is not alone, one a second after is; with more BE files
// than it reads (ctl.NodeBEFiles), no period is alone, whatever they say.
func TestLSReadsEveryBEFile(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	p, h := lsOn(t, c, dir)
	period(t, c, p, 3*ms) // its first look at the BE files: one, unstamped
	claims := t.TempDir() // where the claims' BE files are linked
	late := ctl.BE{Node: "node-test", Claim: "late", Dir: claims}
	if err := ctl.MakeBE(dir, late); err != nil {
		t.Fatal(err)
	}
	stampBE(t, dir, late.Name(), c.Now())
	stamped := c.Now()
	period(t, c, p, 5*ms)
	if got, want := h.Snapshot().TideStatus.Alone, histOf(3*ms); got != want {
		t.Errorf("a period just after a launch stamped in a BE file made later: alone %v, want %v", got, want)
	}
	c.RunFor(stamped + ctl.NodeQuiet + c.Step - c.Now())
	period(t, c, p, 7*ms)
	if got, want := h.Snapshot().TideStatus.Alone, histOf(3*ms, 7*ms); got != want {
		t.Errorf("a period a second after the launch: alone %v, want %v", got, want)
	}
	for i := 2; i <= ctl.NodeBEFiles; i++ { // one more than it reads
		if err := ctl.MakeBE(dir, ctl.BE{Node: "node-test", Claim: fmt.Sprint("c", i), Dir: claims}); err != nil {
			t.Fatal(err)
		}
	}
	period(t, c, p, 9*ms)
	if got, want := h.Snapshot().TideStatus.Alone, histOf(3*ms, 7*ms); got != want {
		t.Errorf("a period beside %d BE files: alone %v, want %v", ctl.NodeBEFiles+1, got, want)
	}
}

// beLaunchOf is the latest BE launch the BE file path says.
func beLaunchOf(t *testing.T, path string) time.Duration {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := unsafe.Offsetof(ctl.BEFile{}.BELaunchNS)
	return time.Duration(binary.LittleEndian.Uint64(b[at : at+8]))
}

// TestBEOwnFileReplaced: carve removes a running BE tenant's BE file and
// makes another in its place (a new inode, as root's fence does for a
// writer missing from one listing): once CARVE_NODE_BE_LIST_NS has passed, the
// BE shim's launches are stamped in the new file, the one the LS tenant
// reads, and the LS tenant's next busy period is not alone. A BE shim
// that kept the file it mapped first stamped one no one reads.
func TestBEOwnFileReplaced(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	p, h := lsOn(t, c, dir)
	period(t, c, p, 3*ms)
	be, _ := beOn(t, c, dir, ctl.Tide{})
	be.say(t, "dur 1000")
	be.say(t, "klaunch kernel") // its BE file mapped and stamped
	path := filepath.Join(dir, "node-test"+ctl.NodeDirSuffix, ctl.NodeBEFile)
	if beLaunchOf(t, path) == 0 {
		t.Fatal("the BE tenant's launch was not stamped in its BE file")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := ctl.MakeBE(dir, ctl.BE{Node: "node-test"}); err != nil {
		t.Fatal(err)
	}
	c.RunFor(ctl.NodeQuiet + c.Step) // past the look, and the first launch's quiet
	since := c.Now()
	be.say(t, "klaunch kernel")
	if got := beLaunchOf(t, path); got < since {
		t.Errorf("a launch after the BE file was made anew: stamped %v in it, want %v or later", got, since)
	}
	period(t, c, p, 5*ms)
	if got, want := h.Snapshot().TideStatus.Alone, histOf(3*ms); got != want {
		t.Errorf("a period just after a launch of the BE tenant whose file was made anew: alone %v, want %v", got, want)
	}
}
