// The node directory end to end, across users (ARCHITECTURE.md, "One
// node, one view"): tenants of two users, each a real process under the
// shim on the fake driver, their blocks made as their carve run makes
// them, recorded and seated by root's fence, and tide holding one user's
// BE tenant back for the other's LS tenant through files neither may
// write but its own.

package shimtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/preload"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// The variables of the tenant helper (tenantHelper): the class of the
// tenant it makes, its runtime directory, and the shim and the program
// it then runs.
const (
	tenantEnv      = "CARVE_SHIMTEST_TENANT"
	tenantDirEnv   = "CARVE_SHIMTEST_DIR"
	tenantShimEnv  = "CARVE_SHIMTEST_SHIM"
	tenantProgEnv  = "CARVE_SHIMTEST_PROGRAM"
	nodeDirBEEpoch = 50 * time.Millisecond // the BE tenant's epoch: what one launch beside busy LS work is held
)

func TestMain(m *testing.M) {
	if os.Getenv(tenantEnv) != "" {
		tenantHelper()
	}
	os.Exit(m.Run())
}

// nodeDirTenant is what carve run makes a tenant of class ("ls" or "be")
// on the fake driver's first GPU, whose node block is named by its UUID
// (the only name root's fence makes a node block of): an LS tenant on
// TPC bits 0-1, a BE tenant on every live TPC.
func nodeDirTenant(class string) ctl.Init {
	part := ctl.Part{GPU: fakeGPU0, Node: ctl.NodeName(fakeGPU0), Live: live}
	if class == "ls" {
		part.Mask, part.SMs = enableOnly(0, 1), 4
		return ctl.Init{Class: ctl.ClassLS, Comm: []string{"ls-tenant"}, Parts: []ctl.Part{part}}
	}
	part.Mask, part.SMs = allLive, allLiveSMs
	return ctl.Init{Class: ctl.ClassBE, Comm: []string{"be-tenant"}, Tide: ctl.Tide{Epoch: nodeDirBEEpoch}, Parts: []ctl.Part{part}}
}

// tenantHelper is the test binary run as a user's carve run in the node
// directory: it makes its block for its own pid (ctl.Create, as its
// user), says "made", and once told a line (root's fence has run) looks
// for its record and seat as carve run does (place.AwaitSeats), says
// "seated" where both are there without a wait, and execs the program
// under the shim as carve run does (preload.Env). Where anything fails it
// says so and exits.
func tenantHelper() {
	dir := os.Getenv(tenantDirEnv)
	in := nodeDirTenant(os.Getenv(tenantEnv))
	in.PID = os.Getpid()
	h, err := ctl.Create(dir, in)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("made")
	for b := make([]byte, 1); ; { // unbuffered: the rest of stdin is the program's
		if n, err := os.Stdin.Read(b); n == 0 || err != nil {
			os.Exit(2)
		} else if b[0] == '\n' {
			break
		}
	}
	left, recorded := place.AwaitSeats(dir, ctl.Entry{Snapshot: h.Snapshot(), Path: h.Path}, func(time.Duration) {
		fmt.Println("waited: after root's fence, no record or seat yet")
		os.Exit(3)
	})
	if len(left) > 0 || !recorded {
		fmt.Println("unseated", len(left), recorded)
		os.Exit(3)
	}
	fmt.Println("seated")
	prog := os.Getenv(tenantProgEnv)
	env := preload.Env(preload.Without(os.Environ(), tenantEnv, tenantDirEnv, tenantShimEnv, tenantProgEnv),
		os.Getenv(tenantShimEnv), dir, h.Path)
	err = syscall.Exec(prog, []string{prog}, env)
	fmt.Println("error", err)
	os.Exit(2)
}

// lineWithin reads p's next line, failing the test if it takes longer
// than limit of real time (a hung helper, not a bound of what it does).
func lineWithin(t testing.TB, p *proc, limit time.Duration) string {
	t.Helper()
	got := make(chan string, 1)
	go func() { line, _ := p.out.ReadString('\n'); got <- line }()
	select {
	case line := <-got:
		return strings.TrimSuffix(line, "\n")
	case <-time.After(limit):
		t.Fatalf("no line from pid %d after %v; stderr: %s", p.cmd.Process.Pid, limit, p.stderr)
	}
	return ""
}

// makeAs starts the tenant helper (bin, a copy of the test binary every
// user may run) as uid, making a tenant of class in the node directory
// dir that will run the driver under the shim's test build on c; it
// returns once the tenant's block is made.
func makeAs(t testing.TB, c *shimtest.Clock, bin, dir string, uid int, class string) *proc {
	t.Helper()
	a := artifacts(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=/usr/bin:/bin", tenantEnv + "=" + class, tenantDirEnv + "=" + dir,
		tenantShimEnv + "=" + a.TestShim, tenantProgEnv + "=" + a.Driver, "CARVE_LIBCUDA=" + a.Fake, c.Env()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	p := spawn(t, cmd)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) // one waiting for the clock would wait for good
	if line := lineWithin(t, p, c.Limit); line != "made" {
		t.Fatalf("uid %d's %s tenant: %q; stderr: %s", uid, class, line, p.stderr)
	}
	return p
}

// start has the helper p, its block made, go on to its record and seat
// and run the program: it returns once the driver is loaded with its main
// thread waiting for commands, as startOn does.
func (p *proc) start(t testing.TB, c *shimtest.Clock, name string) *vproc {
	t.Helper()
	fmt.Fprintln(p.in, "go")
	if line := lineWithin(t, p, c.Limit); line != "seated" {
		t.Fatalf("%s tenant, after root's fence: %q; stderr: %s", name, line, p.stderr)
	}
	if line := lineWithin(t, p, c.Limit); line != "ready" {
		t.Fatalf("%s tenant's driver did not start: %q; stderr: %s", name, line, p.stderr)
	}
	v := &vproc{p: p, c: c, pid: p.cmd.Process.Pid}
	c.Name(v.pid, name)
	c.Park(v.pid)
	return v
}

// asUID runs the shell command script with "$1" path as uid.
func asUID(uid int, script, path string) error {
	cmd := exec.Command("/bin/sh", "-c", script, "sh", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return cmd.Run()
}

// openRW opens "$1" for reading and writing, and writes nothing.
const openRW = `exec 3<>"$1"`

// nodeDirOnClock makes a node directory (as sudo carve node init), a copy
// of the test binary every user may run, and a clock every user's tenants
// wait on. It needs root, to run tenants as other uids.
func nodeDirOnClock(t *testing.T) (dir, bin string, c *shimtest.Clock) {
	if os.Geteuid() != 0 {
		t.Skip("runs tenants of other users: needs root")
	}
	a := artifacts(t)
	for _, d := range []string{a.Dir, filepath.Dir(a.TestShim)} { // other uids load the shim and the driver from them
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base, err := os.MkdirTemp("", "carve-node-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "node")
	if err := ctl.InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(base, "shimtest.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c = shimtest.NewClock(t, base, 100*us)
	if err := os.Chmod(c.Path, 0o666); err != nil { // every tenant's threads wait on it
		t.Fatal(err)
	}
	return dir, bin, c
}

// TestNodeDirTwoUsersEndToEnd: in a node directory (root's, mode 1777),
// uid 65534's LS tenant and uid 65533's BE tenant, each a process under
// the shim on the fake driver, their blocks made by their own users as
// carve run makes them (ctl.Create, then place.AwaitSeats, then exec
// under the shim), are recorded and seated by root's fence (place.Fence,
// as carve daemon runs it) before their programs start: it makes the
// GPU's node block, root's, mode 0644, and the LS tenant's LS file,
// handed to uid 65534. Then the LS tenant's shim joins its seat, mapping
// its LS file read-write and writing its busy state there; while it has
// work in flight the BE tenant of the other user is held (a launch an
// epoch), and once its work is done not at all; and neither user can
// write the node block (both shims map it read-only, and an open for
// writing as either user fails where each writes its own file). It needs
// root, to run the tenants as other uids.
func TestNodeDirTwoUsersEndToEnd(t *testing.T) {
	dir, bin, c := nodeDirOnClock(t)
	const lsUID, beUID = 65534, 65533
	lsMade := makeAs(t, c, bin, dir, lsUID, "ls")
	beMade := makeAs(t, c, bin, dir, beUID, "be")
	for _, p := range []*proc{lsMade, beMade} {
		st, err := os.Stat(filepath.Join(dir, strconv.Itoa(p.cmd.Process.Pid)))
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != p.cmd.SysProcAttr.Credential.Uid || st.Mode().Perm() != ctl.BlockPerm(dir) {
			t.Fatalf("pid %d's block: mode %v of uid %d, want %v of its user's", p.cmd.Process.Pid, st.Mode(), uid, ctl.BlockPerm(dir))
		}
	}
	if err := place.Fence(dir); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	ls := lsMade.start(t, c, "LS")
	be := beMade.start(t, c, "BE")

	name := ctl.NodeName(fakeGPU0)
	n, err := ctl.PeekNode(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	node := filepath.Join(dir, name)
	if st, err := os.Stat(node); err != nil || st.Sys().(*syscall.Stat_t).Uid != 0 || st.Mode().Perm() != ctl.NodeSharedPerm {
		t.Fatalf("the node block root's fence made: %v, %v; want root's, mode %v", st, err, ctl.NodeSharedPerm)
	}

	// (1) the LS tenant's shim joins its seat, its LS file its user's
	ls.say(t, "sms") // loaded and joined
	s, ok := busyOf(n, ls.pid)
	if !ok {
		t.Fatalf("the LS tenant (pid %d) has no entry in any seat's LS file: %+v", ls.pid, n.LS())
	}
	lsFile := n.LSPath(s.Slot)
	if st, err := os.Stat(lsFile); err != nil || st.Sys().(*syscall.Stat_t).Uid != lsUID || st.Mode().Perm() != ctl.NodeSharedPerm {
		t.Fatalf("the LS tenant's LS file: %v, %v; want uid %d's, mode %v", st, err, lsUID, ctl.NodeSharedPerm)
	}
	if s.Busy {
		t.Fatalf("the LS tenant is busy before any work: %+v", s)
	}

	// (2) the BE tenant is held while the LS tenant has work in flight, not
	// before or after
	if d := be.burst(t, 1); d != 0 {
		t.Fatalf("a BE launch beside the idle LS tenant: held %v, want not", d)
	}
	const work = 200 * ms
	ls.say(t, fmt.Sprintf("dur %d", work/time.Microsecond))
	ls.say(t, "klaunch kernel")
	if s, _ := busyOf(n, ls.pid); !s.Busy {
		t.Fatalf("the LS tenant with work in flight did not write itself busy: %+v", s)
	}
	if d := be.burst(t, 1); d != nodeDirBEEpoch {
		t.Errorf("a BE launch of uid %d beside uid %d's busy LS tenant: held %v, want an epoch (%v)", beUID, lsUID, d, nodeDirBEEpoch)
	}
	c.Drive("the LS tenant's work to be done", func() bool { s, _ := busyOf(n, ls.pid); return !s.Busy }, work)
	if d := be.burst(t, 1); d != 0 {
		t.Errorf("a BE launch after the LS tenant's work was done: held %v, want not", d)
	}

	// (3) neither user can open the node block for writing; each its own
	// file (the BE tenant's BE file its user's, which the LS tenant read
	// when its busy period ended)
	beFile := filepath.Join(node+ctl.NodeDirSuffix, ctl.BE{UID: beUID, Shared: true}.Name())
	for _, tc := range []struct {
		v    *vproc
		uid  int
		maps map[string]string
		own  string
	}{
		{ls, lsUID, map[string]string{node: "r--s", lsFile: "rw-s", beFile: "r--s"}, lsFile},
		{be, beUID, map[string]string{node: "r--s", lsFile: "r--s", beFile: "rw-s"}, beFile},
	} {
		got := mapsOf(t, tc.v.pid, name)
		for path, perm := range tc.maps {
			if got[path] != perm {
				t.Errorf("uid %d's tenant maps %s as %q, want %q (all: %v)", tc.uid, path, got[path], perm, got)
			}
		}
		if len(got) != len(tc.maps) {
			t.Errorf("uid %d's tenant maps %v, want %v", tc.uid, got, tc.maps)
		}
		if err := asUID(tc.uid, openRW, node); err == nil {
			t.Errorf("uid %d wrote the node block", tc.uid)
		}
		if err := asUID(tc.uid, openRW, tc.own); err != nil {
			t.Errorf("uid %d could not write its own %s: %v", tc.uid, tc.own, err)
		}
	}
}

// ownBEFile is the BE file the tenant v's shim stamps: the one it maps for
// writing, of the node block name's.
func ownBEFile(t *testing.T, v *vproc, name string) string {
	t.Helper()
	var own []string
	for path, perm := range mapsOf(t, v.pid, name) {
		if perm == "rw-s" {
			own = append(own, path)
		}
	}
	if len(own) != 1 {
		t.Fatalf("pid %d maps %v for writing, want its BE file alone", v.pid, own)
	}
	return own[0]
}

// aloneOf is the histogram of the busy periods alone of the tenant of pid
// in dir.
func aloneOf(t *testing.T, dir string, pid int) ctl.Hist {
	t.Helper()
	l, err := ctl.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Live {
		if e.PID == pid {
			return e.TideStatus.Alone
		}
	}
	t.Fatalf("no block of pid %d in %s", pid, dir)
	return ctl.Hist{}
}

// TestBEFileOwnPerWriter: in the node directory each user's BE tenants
// stamp a BE file of their own, so one that writes its own back to 0
// cannot hide another's launch: uid 65532's BE tenant zeroes the file it
// stamps just after uid 65533's BE tenant launched, and cannot open the
// other's; the LS tenant's next busy period still counts as beside a BE,
// not alone. With the GPU's one BE file, which every BE tenant wrote, it
// counted alone.
func TestBEFileOwnPerWriter(t *testing.T) {
	dir, bin, c := nodeDirOnClock(t)
	const lsUID, aUID, bUID = 65534, 65533, 65532
	lsMade := makeAs(t, c, bin, dir, lsUID, "ls")
	aMade := makeAs(t, c, bin, dir, aUID, "be")
	bMade := makeAs(t, c, bin, dir, bUID, "be")
	if err := place.Fence(dir); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	ls := lsMade.start(t, c, "LS")
	a := aMade.start(t, c, "BE a")
	b := bMade.start(t, c, "BE b")
	name := ctl.NodeName(fakeGPU0)
	ls.say(t, "sms") // joined

	period(t, c, ls, 3*ms)
	if got, want := aloneOf(t, dir, ls.pid), histOf(3*ms); got != want {
		t.Fatalf("a busy period with no BE launch: alone %v, want %v", got, want)
	}
	a.say(t, "dur 1000")
	a.say(t, "klaunch kernel") // the LS tenant is idle: not held, stamped
	aFile, bFile := ownBEFile(t, a, name), ownBEFile(t, b, name)
	if err := asUID(bUID, `dd if=/dev/zero of="$1" bs=8 seek=8 count=1 conv=notrunc 2>/dev/null`, bFile); err != nil {
		t.Fatalf("uid %d writing its own BE file %s: %v", bUID, bFile, err)
	}
	if err := asUID(bUID, openRW, aFile); err == nil {
		t.Errorf("uid %d opened uid %d's BE file %s for writing", bUID, aUID, aFile)
	}
	period(t, c, ls, 20*ms)
	if got, want := aloneOf(t, dir, ls.pid), histOf(3*ms); got != want {
		t.Errorf("a busy period just after uid %d's BE launch, uid %d's BE file zeroed: alone %v, want %v (not the 20 ms)",
			aUID, bUID, got, want)
	}
}
