// Tests of carve mps touch, and of carve run starting it.

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/mps/mpstest"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// clientsOf reads the fake driver's log of MPS client connections
// (FAKECUDA_CLIENT_LOG): each line's pid and pipe directory, but those of pid
// not.
func clientsOf(t *testing.T, log string, not int) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" && !strings.HasPrefix(l, fmt.Sprintf("client %d ", not)) {
			got = append(got, l)
		}
	}
	return got
}

// touchSandbox is a built carve with the fake driver (two GPUs), logging
// MPS client connections to the log it returns, and the fake MPS control
// daemon on PATH.
func touchSandbox(t *testing.T) (carveBin string, b shimtest.Built, log string) {
	t.Helper()
	carveBin, _ = builtCarve(t)
	b = shimtest.Build(t)
	t.Setenv("CARVE_LIBCUDA", b.Fake)
	log = filepath.Join(t.TempDir(), "clients")
	t.Setenv("FAKECUDA_CLIENT_LOG", log)
	t.Setenv("PATH", filepath.Dir(mpstest.Control(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	return carveBin, b, log
}

// awaitClients waits up to 20s until log has n clients but pid's, and
// fails the test where it has another number then.
func awaitClients(t *testing.T, what, log string, pid, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := clientsOf(t, log, pid)
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("%s: clients %q, want %d", what, got, n)
			}
			return got
		}
	}
}

// TestRunTouchesMPSAfterFirstLaunch: a tenant carve run starts under MPS
// gets one client connected to carve's MPS after its first kernel launch
// and none before it; one that ends without a launch gets none; outside
// MPS none. carve mps touch alone connects at once, and refuses with no MPS.
func TestRunTouchesMPSAfterFirstLaunch(t *testing.T) {
	carveBin, b, log := touchSandbox(t)
	if _, err := exec.Command(carveBin, "mps", "touch").CombinedOutput(); err == nil {
		t.Error("carve mps touch with no MPS running: no error")
	}
	d := mps.Default()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	await := func(what string, pid, n int) []string { t.Helper(); return awaitClients(t, what, log, pid, n) }
	// a tenant that is not there is an error at once, not a background process that fails unseen
	for _, after := range []string{"999999999", filepath.Join(t.TempDir(), "nothing"), "pid"} {
		if out, err := exec.Command(carveBin, "mps", "touch", "--after", after, "--background").CombinedOutput(); err == nil || !strings.Contains(string(out), after) {
			t.Errorf("carve mps touch --after %s --background: %v %q, want an error naming it", after, err, out)
		}
	}

	// the fake has two GPUs: a touch is a client of each
	touched := func(what string, got []string) {
		t.Helper()
		if !strings.HasSuffix(got[0], " "+d.PipeDir()) || got[1] != got[0] {
			t.Errorf("%s connected %q, want one process through carve's MPS %s on each GPU", what, got, d.PipeDir())
		}
	}
	if out, err := exec.Command(carveBin, "mps", "touch").Output(); err != nil || !strings.Contains(string(out), "on 2 GPU(s)") {
		t.Fatalf("carve mps touch: %v %q", err, out)
	}
	touched("carve mps touch", await("carve mps touch", 0, 2))
	os.Remove(log)

	cmd := exec.Command(carveBin, "run", "-q", "-n", "4", "--", b.Driver)
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(outp)
	ask := func(c string) string {
		fmt.Fprintln(in, c)
		if !out.Scan() {
			t.Fatalf("the tenant ended at %q", c)
		}
		return out.Text()
	}
	pid := cmd.Process.Pid
	ask("sms 0") // running, its shim loaded: no launch yet
	time.Sleep(100 * time.Millisecond)
	if got := clientsOf(t, log, pid); len(got) != 0 {
		t.Errorf("clients before the tenant's first launch: %q", got)
	}
	ask("klaunch kernel")
	touched("the touch after the first launch", await("after the first launch", pid, 2))
	ask("klaunch kernel")
	fmt.Fprintln(in, "quit")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := clientsOf(t, log, pid); len(got)%2 != 0 {
		t.Errorf("clients after two launches: %q, want whole touches (one a GPU)", got)
	}

	os.Remove(log)
	for _, args := range [][]string{{"run", "-q", "-n", "4", "--", "true"}, {"run", "-q", "--no-mps", "-n", "4", "--", b.Driver}} {
		c := exec.Command(carveBin, args...)
		c.Stdin = strings.NewReader("klaunch kernel\nquit\n")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("carve %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := clientsOf(t, log, -1); len(got) != 0 {
		t.Errorf("clients after a tenant with no launch and one outside MPS: %q", got)
	}
}

// TestTouchTimes: touchAfterLaunch touches at touchTimes from the tenant's
// first launch (the clock the test's), while the tenant lives; not at all
// for one that ended with no launch.
func TestTouchTimes(t *testing.T) {
	dir := t.TempDir()
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var now time.Duration
	var touched []time.Duration
	sleep := func(d time.Duration) {
		now += d
		if now == 3*touchPoll { // the tenant's first launch
			atomic.StoreUint64(&ctltest.MapBlock(t, h.Path).Launches, 1)
		}
	}
	if err := touchAfterLaunch(h.Path, sleep, func() error { touched = append(touched, now); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(touched) != len(touchTimes) || touched[0] != 3*touchPoll || touched[len(touched)-1] != 3*touchPoll+128*time.Second {
		t.Errorf("touched at %v, want at %v from %v", touched, touchTimes, 3*touchPoll)
	}
	for i := range touched {
		if i < len(touchTimes) && touched[i]-touched[0] != touchTimes[i] {
			t.Errorf("touch %d at %v from the launch, want %v", i, touched[i]-touched[0], touchTimes[i])
		}
	}

	gone := ctltest.EndedBlock(t, dir)
	touched = nil
	if err := touchAfterLaunch(gone.Path, sleep, func() error { touched = append(touched, now); return nil }); err != nil || len(touched) != 0 {
		t.Errorf("a tenant that ended with no launch: %v, touched %v", err, touched)
	}
	atomic.StoreUint64(&ctltest.MapBlock(t, gone.Path).Launches, 1) // it launched, then ended: no touch after its end
	if err := touchAfterLaunch(gone.Path, sleep, func() error { touched = append(touched, now); return nil }); err != nil || len(touched) != 0 {
		t.Errorf("a tenant that launched and ended: %v, touched %v", err, touched)
	}
}

// TestDaemonTouchesClaimProcess: carve daemon, running carve's MPS, touches
// a claim's process under MPS after its first launch, the process named by
// a pid in its container that means nothing here (that of an ended
// process), running while its shim holds its block's lock; none before.
func TestDaemonTouchesClaimProcess(t *testing.T) {
	carveBin, _, log := touchSandbox(t)
	rt, err := ctl.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cd, err := ctl.ClaimDir(rt, "uid-a")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(cd, 0o755)
	root, err := ctl.CreateClaimRoot(cd, ctl.Init{Flags: ctl.FlagMPS, Comm: []string{"claim", "ns/a"},
		Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf0)}, Live: [4]uint32{0xffff}, SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	root.Close()
	proc := ctltest.EndedBlock(t, cd)
	ctltest.HoldLock(t, proc.Path)

	d := exec.Command(carveBin, "daemon", "--listen", "127.0.0.1:0", "--interval", "10ms")
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Process.Kill(); d.Wait(); mps.Default().Stop() })
	time.Sleep(300 * time.Millisecond) // passes every 10ms
	if got := clientsOf(t, log, -1); len(got) != 0 {
		t.Errorf("clients before the claim's process launched: %q", got)
	}
	atomic.StoreUint64(&ctltest.MapBlock(t, proc.Path).Launches, 1)
	if got := awaitClients(t, "after the claim's process launched", log, -1, 2); !strings.HasSuffix(got[0], " "+mps.Default().PipeDir()) {
		t.Errorf("clients after the claim's process launched: %q, want a process through carve's MPS %s", got, mps.Default().PipeDir())
	}
}
