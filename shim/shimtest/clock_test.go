// Tide's tests on a virtual clock (shimtest.Clock): the driver processes
// load the shim's test build, whose clocks, naps and yields run on a clock
// the test advances, and the fake driver runs its kernels on it. A step
// happens only once every thread of theirs waits for the clock or is
// parked, so what the shim does at each time, and so every count, is the
// same on every run, however loaded the host.

package shimtest_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

const ms = time.Millisecond

// askLimit is the virtual time a command may take.
const askLimit = 30 * time.Second

// vproc is a driver process under the shim's test build on a clock.
type vproc struct {
	p   *proc
	c   *shimtest.Clock
	pid int
}

// startOn starts the driver as startExec does, under the shim's test build
// on the clock c, with env added to its environment, and returns once it
// is loaded with its main thread waiting for commands.
func startOn(t testing.TB, c *shimtest.Clock, dir, name string, in ctl.Init, env ...string) (*vproc, *ctl.Handle) {
	t.Helper()
	p, h := startExec(t, dir, in, append([]string{"LD_PRELOAD=" + artifacts(t).TestShim, c.Env()}, env...)...)
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() }) // one waiting for the clock would wait for good
	ready := make(chan string, 1)
	go func() { line, _ := p.out.ReadString('\n'); ready <- line }()
	select {
	case line := <-ready:
		if line != "ready\n" {
			t.Fatalf("driver did not start: %q; stderr: %s", line, p.stderr)
		}
	case <-time.After(c.Limit):
		t.Fatalf("driver not loaded after %v", c.Limit)
	}
	v := &vproc{p: p, c: c, pid: p.cmd.Process.Pid}
	c.Name(v.pid, name)
	c.Park(v.pid)
	return v, h
}

func lsOn(t testing.TB, c *shimtest.Clock, dir string) (*vproc, *ctl.Handle) {
	return startOn(t, c, dir, "LS", ctl.Init{Class: ctl.ClassLS, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live, Node: "node-test"}}})
}

func beOn(t testing.TB, c *shimtest.Clock, dir string, tide ctl.Tide) (*vproc, *ctl.Handle) {
	return startOn(t, c, dir, "BE", ctl.Init{Class: ctl.ClassBE, Tide: tide, Parts: []ctl.Part{{Node: "node-test", Mask: allLive, Live: live, SMs: allLiveSMs}}})
}

// ask sends cmd and drives the clock until the answer comes: the answer,
// and the virtual time it took.
func (v *vproc) ask(t testing.TB, cmd string) (string, time.Duration) {
	t.Helper()
	line, d, err := v.c.Ask(v.pid, v.p.in, v.p.out, cmd, askLimit)
	if err != nil {
		t.Fatalf("%s: driver died: %v; stderr: %s", cmd, err, v.p.stderr)
	}
	return strings.TrimSpace(line), d
}

// say is ask without the time.
func (v *vproc) say(t testing.TB, cmd string) string {
	t.Helper()
	s, _ := v.ask(t, cmd)
	return s
}

// burst launches n kernels back to back: the virtual time it took.
func (v *vproc) burst(t testing.TB, n int) time.Duration {
	t.Helper()
	got, d := v.ask(t, fmt.Sprintf("burst %d", n))
	if _, err := strconv.ParseFloat(strings.TrimPrefix(got, "burst "), 64); err != nil {
		t.Fatalf("burst: %q", got)
	}
	return d
}

// wait ends the process and frees its slot on the clock.
func (v *vproc) wait(t testing.TB) {
	t.Helper()
	v.p.wait(t)
	v.c.Release(v.pid)
}

// playedLS is an LS tenant the test plays in the node block (a player),
// in slot 0, reserving the TPCs of a partition (TPC bits
// 0-1 for lsOn's): busy exactly while the test says, with a heartbeat at
// every step while busy.
// A BE's shim then sees each change at the step the test makes it, with no
// second actor's timing in play.
type playedLS struct {
	node player
	c    *shimtest.Clock
	busy bool
}

// lsOnClock makes a node block on a virtual clock with an LS tenant
// played on TPCs 0 and 1, not yet busy: their directory, the node, the
// clock and the tenant.
func lsOnClock(t testing.TB) (string, *ctl.Node, *shimtest.Clock, *playedLS) {
	dir := t.TempDir()
	n := tideNode(t, dir)
	c := shimtest.NewClock(t, dir, 10*us)
	return dir, n, c, playLS(t, n, c, enableOnly(0, 1))
}

// playLS plays an LS tenant of the given partition in n's slot 0, not yet
// busy.
func playLS(t testing.TB, n *ctl.Node, c *shimtest.Clock, partition [4]uint32) *playedLS {
	l := &playedLS{node: playOn(t, n), c: c}
	var reserved [4]uint32 // as enable bits, as a shim writes them
	for w := range reserved {
		reserved[w] = ^partition[w] & live[w]
	}
	l.node.ls(0, os.Getpid(), reserved)
	c.Every(func(now time.Duration) {
		if l.busy {
			l.node.beat(0, now)
		}
	})
	return l
}

// set makes the tenant busy or idle now: the shims see it from the
// clock's next step on, or from a command sent now.
func (l *playedLS) set(busy bool) {
	l.busy = busy
	l.node.busy(0, busy, l.c.Now())
}

// at makes the tenant busy or idle from virtual time t on (ahead of the
// threads that wake at the step that reaches it).
func (l *playedLS) at(t time.Duration, busy bool) { l.c.At(t, func() { l.set(busy) }) }

// serve has the tenant serve one request of d, ending now: BE tenants bound
// their queues for ctl.NodeQuiet after.
func (l *playedLS) serve(d time.Duration) {
	l.node.busy(0, true, l.c.Now()-d)
	l.node.busy(0, false, l.c.Now())
}
