// The kernel table (shim/kern.c): each launch's DRAM bytes counted by its
// function's entry, functions named once each, a bad table left unused,
// and a BE tenant's compute-bound kernels beside busy LS work (tide_be.c).

package shimtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// testTable names the fake's test functions 1 (compute-bound, 1000
// bytes a launch) and 2 (memory-heavy, 5000); function 3 is in no entry.
var testTable = &ctl.KernelTable{GPU: "fake", Kernels: map[string]ctl.Kernel{
	"fake_fn_1": {Bytes: 1000, NS: 1000, Pct: 10},
	"fake_fn_2": {Bytes: 5000, NS: 1000, Pct: 80},
}}

// startSpoiled starts the driver as startExec does, with spoil called
// between the block's making and the shim's load.
func startSpoiled(t testing.TB, dir string, in ctl.Init, spoil func()) (*proc, *ctl.Handle) {
	t.Helper()
	a := artifacts(t)
	args := []string{"-c", `read x; exec env "$@"`, "sh", "LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + dir, "CARVE_LIBCUDA=" + a.Fake}
	cmd := exec.Command("/bin/sh", append(args, a.Driver)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	p := spawn(t, cmd)
	in.PID = cmd.Process.Pid
	h, err := ctl.Create(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	spoil()
	fmt.Fprintln(p.in, "go")
	p.ready(t)
	return p, h
}

// TestKernelBytesCounted: each launch adds its function's bytes by the
// table, a function the table lacks and a graph's launch count as
// unknown, and the driver is asked each function's name once.
func TestKernelBytesCounted(t *testing.T) {
	dir := t.TempDir()
	p, h := startSpoiled(t, dir, ctl.Init{Kernels: ctl.Kernels{Path: "/k.json", Table: testTable},
		Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}}, func() {})
	for _, c := range []string{"fl 1 1 3", "fl 2 1 2", "fl 3 1 1", "fl 1 1 1"} {
		if got := p.ask(t, c); got != "rc 0" {
			t.Fatalf("%s: %q", c, got)
		}
	}
	if got := p.ask(t, "klaunch graph"); !strings.HasPrefix(got, "mask") {
		t.Fatalf("a graph's launch: %q", got)
	}
	s := h.Snapshot()
	if want := (ctl.KernelStatus{Bytes: 4*1000 + 2*5000, Unknown: 2}); s.KernelStatus != want || s.Kernels != "/k.json" || s.KernelsID == 0 {
		t.Errorf("kernel status %+v of %q (id %x), want %+v of /k.json", s.KernelStatus, s.Kernels, s.KernelsID, want)
	}
	if got := p.ask(t, "calls"); !strings.Contains(got, "cuFuncGetName=3 ") && !strings.HasSuffix(got, "cuFuncGetName=3") {
		t.Errorf("driver calls %q: want cuFuncGetName=3, once for each function", got)
	}
}

// TestKernelTableUnused: with no table named, or one that is not what
// the block says (cut short, changed, of another id, another user's, not
// a file), no
// launch is counted, the driver is asked no name, and the shim says why
// and runs on.
func TestKernelTableUnused(t *testing.T) {
	file := func(t *testing.T, dir string) string {
		m, _ := filepath.Glob(filepath.Join(dir, "kernels-*"))
		if len(m) != 1 {
			t.Fatalf("compact tables %v, want one", m)
		}
		return m[0]
	}
	rewrite := func(f func([]byte) []byte) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			b, err := os.ReadFile(file(t, dir))
			if err == nil {
				err = os.WriteFile(file(t, dir), f(b), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		table *ctl.KernelTable
		spoil func(t *testing.T, dir string)
	}{
		{"none", nil, func(*testing.T, string) {}},
		{"short", testTable, rewrite(func(b []byte) []byte { return b[:len(b)-1] })},
		{"longer", testTable, rewrite(func(b []byte) []byte { return append(b, make([]byte, 24)...) })},
		{"changed", testTable, rewrite(func(b []byte) []byte { b[20]++; return b })},
		{"flags", testTable, rewrite(func(b []byte) []byte { b[16+16] = 2; return b })},
		{"count", testTable, rewrite(func(b []byte) []byte { b[4] = 0xff; b[5] = 0xff; return b })},
		{"empty", testTable, rewrite(func([]byte) []byte { return nil })},
		{"gone", testTable, func(t *testing.T, dir string) { os.Remove(file(t, dir)) }},
		{"owner", testTable, func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give the file to another user")
			}
			if err := os.Chown(file(t, dir), 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", testTable, func(t *testing.T, dir string) {
			f := file(t, dir)
			os.Remove(f)
			if err := syscall.Mkfifo(f, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var p *proc
			var h *ctl.Handle
			p, h = startSpoiled(t, dir, ctl.Init{Kernels: ctl.Kernels{Path: "/k.json", Table: tc.table},
				Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}}, func() { tc.spoil(t, dir) })
			if got := p.ask(t, "fl 1 1 2"); got != "rc 0" {
				t.Fatalf("launches: %q", got)
			}
			if got := p.ask(t, "fl 3 1 1"); got != "rc 0" {
				t.Fatalf("launches: %q", got)
			}
			if s := h.Snapshot().KernelStatus; s != (ctl.KernelStatus{}) {
				t.Errorf("kernel status %+v, want nothing counted", s)
			}
			if got := p.ask(t, "calls"); strings.Contains(got, "cuFuncGetName") {
				t.Errorf("driver calls %q: want no name asked", got)
			}
			said := strings.Contains(p.stderr.String(), "kernel table (/k.json) is not used")
			if said != (tc.table != nil) {
				t.Errorf("stderr %q: want the unused table said %v", p.stderr, tc.table != nil)
			}
		})
	}
}

// beWithTable starts a BE tenant with the test table on the clock.
func beWithTable(t testing.TB, c *shimtest.Clock, dir string, tide ctl.Tide) (*vproc, *ctl.Handle) {
	return startOn(t, c, dir, "BE", ctl.Init{Class: ctl.ClassBE, Tide: tide, Kernels: ctl.Kernels{Path: "/k.json", Table: testTable},
		Parts: []ctl.Part{{Node: "node-test", Mask: allLive, Live: live, SMs: allLiveSMs}}})
}

// TestBEComputeBoundBeside: while LS work is in flight, a BE tenant's
// kernel its table calls compute-bound goes at once, narrowed off the LS
// tenant's TPCs, with no share; its memory-heavy kernel and one the table
// lacks wait until the LS work is done.
func TestBEComputeBoundBeside(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beWithTable(t, c, dir, ctl.Tide{InflightMax: 2, Epoch: time.Second})
	be.say(t, "dur 1000")
	ls.set(true)
	narrowed := maskLine(enableOnly(2, 3, 9, 10, 11, 12, 13, 14, 15, 16))
	if got, d := be.ask(t, "fmask 1"); got != narrowed || d != 0 {
		t.Errorf("a compute-bound BE launch beside LS work: %q after %v, want %q (off TPC bits 0-1) at once", got, d, narrowed)
	}
	for _, fn := range []int{2, 3} {
		ls.at(c.Now()+60*ms, false)
		if got, d := be.ask(t, fmt.Sprintf("fmask %d", fn)); got != maskLine(allLive) || d != 60*ms {
			t.Errorf("BE launch of function %d during 60 ms of LS work: %q after %v, want its whole partition after 60 ms", fn, got, d)
		}
		be.say(t, "sync")
		ls.set(true)
	}
	st := h.Snapshot()
	if st.KernelStatus.Beside != 1 || st.TideStatus.NarrowLaunch != 1 || st.TideStatus.HeldLaunches != 2 {
		t.Errorf("status %+v, tide %+v: want one launch beside, narrowed, and two held", st.KernelStatus, st.TideStatus)
	}
}

// TestBEComputeBoundSpendsNoShare: compute-bound launches beside LS work
// leave the share's bucket as it was: with a bucket of two unmeasured
// kernels (1 ms each), three compute-bound launches go, and then two
// memory-heavy ones still do at once.
func TestBEComputeBoundSpendsNoShare(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*time.Microsecond)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, h := beWithTable(t, c, dir, ctl.Tide{Share: 0.1, Epoch: 20 * time.Millisecond})
	c.RunFor(20 * ms) // the bucket fills in an epoch: 2 ms
	ls.set(true)
	for i, fn := range []int{1, 1, 1, 2, 2} {
		if got, d := be.ask(t, fmt.Sprintf("fl %d 1 1", fn)); got != "rc 0" || d != 0 {
			t.Errorf("launch %d (function %d) beside LS work: %q after %v, want at once", i, fn, got, d)
		}
	}
	if st := h.Snapshot(); st.KernelStatus.Beside != 3 || st.TideStatus.NarrowLaunch != 5 || st.TideStatus.HeldLaunches != 0 {
		t.Errorf("status %+v, tide %+v: want 3 beside, 5 narrowed, none held", st.KernelStatus, st.TideStatus)
	}
}
