// What a BE tenant's shim believes of the node block and the LS files
// (shim/tide_node.c): an LS file says what its tenant likes of itself, so a
// busy entry that no LS tenant renews holds BE tenants back for carve's
// lease at most, whatever lease (a block of another release) or heartbeat
// the files say; the shims map the node block read-only and write only
// their own files, which other uids cannot write; and a file cut short
// under a shim's mapping harms no one else.

package shimtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// TestBusySlotHoldsBEOneLease: a slot marked busy by no live LS tenant,
// with the block's lease set to an hour (or its heartbeat an hour ahead),
// holds a BE's burst of launches for ctl.NodeLease from its heartbeat and
// then no more; at an epoch a launch, it would hold each launch an epoch.
func TestBusySlotHoldsBEOneLease(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lease, beat time.Duration // the block's lease; the heartbeat, from now
		least       time.Duration // the BE is held at least this long
	}{
		{"lease of an hour", time.Hour, 0, ctl.NodeLease - 10*ms}, // within an epoch of the lease
		{"heartbeat an hour ahead", ctl.NodeLease, time.Hour, 0},  // never written by the shims' clock
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := tideNode(t, dir)
			c := shimtest.NewClock(t, dir, 100*us)
			be, _ := beOn(t, c, dir, ctl.Tide{})
			node := playOn(t, n)
			node.ls(0, 1, enableOnly(0, 1))
			node.busy(0, true, c.Now()+tc.beat)
			atomic.StoreUint64(&node.b.LeaseNS, uint64(tc.lease))
			const launches = 30 // at the default epoch, 300 ms held
			if d := be.burst(t, launches); d > ctl.NodeLease || d < tc.least {
				t.Errorf("%d BE launches beside a busy slot nobody renews took %v, want %v to the lease, %v",
					launches, d, tc.least, ctl.NodeLease)
			}
		})
	}
}

// mapsOf is the lines of /proc/PID/maps that map a file whose path
// contains part: each its permissions ("r--s") and path.
func mapsOf(t testing.TB, pid int, part string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[5], part) {
			out[f[5]] = f[1]
		}
	}
	return out
}

// TestShimMapsNodeReadOnly: the shims of an LS and a BE tenant map the
// node block read-only, each LS tenant its own LS file read-write and the
// GPU's BE files read-only (once a busy period has ended), and a BE tenant
// the seats' LS files read-only and its own BE file read-write: what a
// tenant's shim writes is its own.
func TestShimMapsNodeReadOnly(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	ls, _ := lsOn(t, c, dir)
	be, _ := beOn(t, c, dir, ctl.Tide{})
	be.burst(t, 1)       // its gate reads the seats' LS files
	period(t, c, ls, ms) // its end reads the BE files
	node := filepath.Join(dir, "node-test")
	beFile := filepath.Join(node+ctl.NodeDirSuffix, ctl.NodeBEFile)
	for who, want := range map[int]map[string]string{
		ls.pid: {node: "r--s", n.LSPath(0): "rw-s", beFile: "r--s"},
		be.pid: {node: "r--s", n.LSPath(0): "r--s", beFile: "rw-s"},
	} {
		got := mapsOf(t, who, "node-test")
		for path, perm := range want {
			if got[path] != perm {
				t.Errorf("pid %d maps %s as %q, want %q (all: %v)", who, path, got[path], perm, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("pid %d maps %v, want %v", who, got, want)
		}
	}
}

// asNobody runs the shell command script with "$1" path as uid 65534, as
// another user's tenant or a pod's container would be.
func asNobody(script, path string) error {
	cmd := exec.Command("/bin/sh", "-c", script, "sh", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd.Run()
}

// zeros writes a page of zeros over "$1".
const zeros = `dd if=/dev/zero of="$1" bs=4096 count=1 conv=notrunc 2>/dev/null`

// TestLSFilesNotWritableByOthers: a tenant under another uid cannot write
// an LS tenant's LS file (in the node directory, where each user's LS
// files are its own, mode 0644), so the BE it would free is still held
// while the LS tenant is busy; and a claim's pod cannot write the node
// block linked into its directory (root's, mode 0644), only its own LS
// file. It needs root, to run the attacker as another uid.
func TestLSFilesNotWritableByOthers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs the attacker as another uid: needs root")
	}
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil { // a node directory
		t.Fatal(err)
	}
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	ls, _ := lsOn(t, c, dir)
	be, _ := beOn(t, c, dir, ctl.Tide{Epoch: 50 * time.Millisecond})
	ls.say(t, "dur 100000000")
	ls.say(t, "klaunch kernel") // 100 s
	c.Settle()
	for _, path := range []string{n.LSPath(0)} {
		if err := asNobody(zeros, path); err == nil {
			t.Errorf("another uid wrote zeros over the LS tenant's LS file %s", path)
		}
	}
	if s, ok := busyOf(n, ls.pid); !ok || !s.Busy {
		t.Fatalf("after another uid's attempts, the LS tenant is not busy: %+v", s)
	}
	if d := be.burst(t, 1); d != 50*ms {
		t.Errorf("a BE launch beside the busy LS tenant took %v, want an epoch (50 ms): held", d)
	}

	// a claim's directory: the node block root's, the pod's LS file its own
	rd := filepath.Join(dir, "run")
	cd := filepath.Join(dir, "claim")
	for _, d := range []string{rd, cd} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(cd, 0o777|os.ModeSticky)
	cn, err := ctl.OpenNode(rd, "node-claim", live)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	if err := ctl.ShareNode(cn.Path); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(cn.Path, filepath.Join(cd, "node-claim")); err != nil {
		t.Fatal(err)
	}
	if _, err := cn.Give(ctl.Seat{Claim: "uid-a", Node: "node-claim", Reserved: enableOnly(0, 1), Dir: cd}); err != nil {
		t.Fatal(err)
	}
	if err := asNobody(zeros, filepath.Join(cd, "node-claim")); err == nil {
		t.Errorf("a pod under another uid wrote the node block linked into its claim's directory")
	}
	if err := asNobody(`rm -f "$1"`, filepath.Join(cd, "node-claim")); err == nil {
		t.Errorf("a pod under another uid removed the node block's link from its claim's directory")
	}
	if err := asNobody(`printf x | dd of="$1" bs=1 seek=40 conv=notrunc 2>/dev/null`, filepath.Join(cd, ctl.LSLinkName("node-claim"))); err != nil {
		t.Errorf("a pod under another uid could not write its own LS file: %v", err)
	}
}

// TestCutShortFilesHarmNoOne: an LS tenant that cuts its LS file short,
// or a BE tenant the BE file, under the others' mappings harms no one
// else: a BE tenant reads the LS file as no one busy and goes on, an LS
// tenant reads the BE file as no BE launch, and a BE tenant's stamps go
// nowhere (a read of a mapping past its file's end would have ended each
// with SIGBUS).
func TestCutShortFilesHarmNoOne(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	ls := playLS(t, n, c, enableOnly(0, 1))
	be, _ := beOn(t, c, dir, ctl.Tide{Epoch: 50 * time.Millisecond})
	ls.set(true)
	if d := be.burst(t, 1); d != 50*ms {
		t.Fatalf("a BE launch beside the busy LS tenant took %v, want an epoch (50 ms)", d)
	}
	if err := os.Truncate(n.LSPath(0), 0); err != nil {
		t.Fatal(err)
	}
	ls.busy = false // the player beats no more: its file is cut short (its last beat is fresh)
	if d := be.burst(t, 3); d != 0 {
		t.Errorf("BE launches beside an LS file cut short took %v, want none held", d)
	}
	real, _ := lsOn(t, c, dir)
	if err := os.Truncate(filepath.Join(dir, "node-test"+ctl.NodeDirSuffix, ctl.NodeBEFile), 0); err != nil {
		t.Fatal(err)
	}
	be.burst(t, 3) // stamps the BE file cut short
	real.say(t, "dur 1000")
	real.say(t, "klaunch kernel") // a busy period, which reads the BE file when it ends
	c.Drive("the LS tenant to be idle", func() bool { s, _ := busyOf(n, real.pid); return !s.Busy }, time.Second)
	if got := real.say(t, "sms"); !strings.HasPrefix(got, "sms ") {
		t.Errorf("the LS tenant after the BE file was cut short: %q", got)
	}
	if d := be.burst(t, 1); d != 0 {
		t.Errorf("a BE launch after the BE file was cut short, no LS tenant busy: held %v, want not", d)
	}
}

// TestSeatMappedOnceItsFileCanBeOpened: a BE tenant that could not open a
// seat's LS file when it first looked (gone for a moment, or no
// descriptor left) maps it once it can, within a tick of the coarse
// clock, so that the LS tenant's work then holds it; it was left unmapped
// for the seat's life.
func TestSeatMappedOnceItsFileCanBeOpened(t *testing.T) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	node := playOn(t, n)
	node.ls(0, 1, enableOnly(0, 1))
	be, _ := beOn(t, c, dir, ctl.Tide{Epoch: 50 * time.Millisecond})
	away := n.LSPath(0) + ".away"
	if err := os.Rename(n.LSPath(0), away); err != nil {
		t.Fatal(err)
	}
	if d := be.burst(t, 1); d != 0 { // its first look: no file
		t.Fatalf("a BE launch beside a seat without its file took %v", d)
	}
	if err := os.Rename(away, n.LSPath(0)); err != nil {
		t.Fatal(err)
	}
	c.RunFor(5 * ms) // a tick of the coarse clock, at least
	node.busy(0, true, c.Now())
	if d := be.burst(t, 1); d != 50*ms {
		t.Errorf("a BE launch beside the busy LS tenant, its file back: held %v, want an epoch (50 ms)", d)
	}
}

// TestBusKillStillKills: a SIGBUS sent to a tenant (kill -BUS), not a
// fault of a file cut short, ends it as it would without the shim's
// handler; the handler had swallowed it.
func TestBusKillStillKills(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	ls, _ := lsOn(t, c, dir)
	ls.say(t, "sms") // joined, its handler set
	if err := syscall.Kill(ls.pid, syscall.SIGBUS); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ls.p.cmd.Wait() }()
	select {
	case <-done:
		ws, ok := ls.p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGBUS {
			t.Errorf("the tenant ended %v, want by SIGBUS", ls.p.cmd.ProcessState)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the tenant lives on 10 s after a SIGBUS sent to it")
	}
}

// TestPauseHoldsBE: a BE tenant whose block pauses it (the SLO
// controller's calibration of an LS tenant's periods alone,
// ctl.Handle.Pause) holds its launches with no LS work anywhere until the
// pause ends, and no longer than ctl.PauseMax a launch whatever the block
// says; with the pause ended it holds nothing.
func TestPauseHoldsBE(t *testing.T) {
	dir := t.TempDir()
	tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 100*us)
	be, h := beOn(t, c, dir, ctl.Tide{})
	free := be.burst(t, 1)
	for _, tc := range []struct {
		name      string
		until     time.Duration // from now; 0: no pause
		held, max time.Duration // held this long beyond a free launch, within max more
	}{
		{"paused 30 ms", 30 * ms, 30 * ms, ms},
		{"paused for an hour", time.Hour, ctl.PauseMax, ms},
		{"pause ended", 0, 0, ms},
	} {
		until := time.Duration(0)
		if tc.until > 0 {
			until = c.Now() + tc.until
		}
		if err := h.Pause(until); err != nil {
			t.Fatal(err)
		}
		if d := be.burst(t, 1) - free; d < tc.held-ms || d > tc.held+tc.max {
			t.Errorf("%s: a BE launch held %v beyond a free one, want %v", tc.name, d, tc.held)
		}
	}
}
