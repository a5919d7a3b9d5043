// Tests of the daemon's fast check of the node directory: a block that
// appears there is seated at the next check, not the next pass.

package daemon

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/prometheus/client_golang/prometheus"
)

// TestCheckSeatsANewBlock: in a node directory (root's, mode 1777), an LS
// tenant's block that a user made (a user's carve seats nothing there)
// has its seat, in a node block root's check made, at the next check;
// its LS file is that user's, mode 0644. A check with nothing changed
// fences nothing.
func TestCheckSeatsANewBlock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node directory is root's, the tenant a user's")
	}
	dir := filepath.Join(t.TempDir(), "node")
	if err := ctl.InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	c := newCollector(dir, false, nil)
	c.reclaim() // the daemon's first pass
	if c.check() {
		t.Fatal("a check with nothing changed fenced")
	}
	pid := sleeper(t)
	live := [4]uint32{0xffff}
	node := ctl.NodeName("GPU-0e0e0e0e-1111-2222-3333-444444444444")
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Class: ctl.ClassLS,
		Parts: []ctl.Part{{GPU: "GPU-0e0e0e0e-1111-2222-3333-444444444444", Node: node, Mask: [4]uint32{^uint32(0xf)}, Live: live, SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := os.Chown(h.Path, 65534, 65534); err != nil { // a user's block
		t.Fatal(err)
	}
	if !c.check() {
		t.Fatal("the check did not see the new block")
	}
	n, err := ctl.PeekNode(dir, node)
	if err != nil {
		t.Fatalf("no node block after the check: %v", err)
	}
	defer n.Close()
	if !n.Seated(pid) {
		t.Fatalf("the LS tenant %d has no seat after the check", pid)
	}
	st, err := os.Lstat(n.LSPath(0))
	if err != nil || st.Mode() != 0o644 || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("the tenant's LS file: %v, %v; want uid 65534's, mode 0644", st, err)
	}
	for i := 0; c.check(); i++ { // what the fence made itself is seen once
		if i == 3 {
			t.Fatal("the check fences again and again with no block changed")
		}
	}
}

// TestFenceJudgesMemory: root's daemon, knowing the GPU's memory
// (Options.GPUs), records a user's first block whose memory limit does
// not fit the GPU with none, and one that fits as it says.
func TestFenceJudgesMemory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node directory is root's, the tenants a user's")
	}
	dir := filepath.Join(t.TempDir(), "node")
	if err := ctl.InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	const uuid = "GPU-0e0e0e0e-1111-2222-3333-444444444444"
	c := newCollector(dir, false, nil)
	c.gpus = []*topo.Topology{{UUID: uuid, MemoryBytes: 80 << 30}}
	var entries []ctl.Entry
	for _, limit := range []uint64{1 << 40, 8 << 30} {
		h, err := ctl.Create(dir, ctl.Init{PID: sleeper(t), MemLimit: limit,
			Parts: []ctl.Part{{GPU: uuid, Mask: [4]uint32{^uint32(0xf)}, Live: [4]uint32{0xffff}, SMs: 8}}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, ctl.Entry{Snapshot: h.Snapshot(), Path: h.Path})
		h.Close()
		if err := os.Chown(h.Path, 65534, 65534); err != nil { // a user's block
			t.Fatal(err)
		}
	}
	c.reclaim() // the daemon's pass
	recs, _ := ctl.ReadRecords(dir)
	for i, want := range []uint64{0, 8 << 30} {
		if got := recs.Of(entries[i]).Memory.Limit; !recs.Recorded(entries[i]) || got != want {
			t.Errorf("a first block of limit %d: recorded %v, limit %d; want %d", entries[i].Memory.Limit, recs.Recorded(entries[i]), got, want)
		}
	}
}

// TestLockHolderMetric: while uid 65534 holds the node directory's
// placement lock, root's daemon serves its pid and user
// (carve_placement_lock_held); once it lets go, nothing.
func TestLockHolderMetric(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node directory is root's, the lock's holder a user's")
	}
	base, err := os.MkdirTemp("", "carve-lock-metric")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // uid 65534 opens the lock in it
		t.Fatal(err)
	}
	dir := filepath.Join(base, "node")
	if err := ctl.InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	c := newCollector(dir, false, nil)
	held := func() string {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "carve_placement_lock_held" {
				return mf.GetMetric()[0].String()
			}
		}
		return ""
	}
	hold := exec.Command("flock", "--shared", filepath.Join(dir, ctl.LockName), "sh", "-c", "echo locked; exec cat")
	hold.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	in, err := hold.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Skipf("flock(1): %v", err)
	}
	defer func() { in.Close(); hold.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("uid 65534's flock: %q", line)
	}
	if got := held(); !strings.Contains(got, `value:"`+strconv.Itoa(hold.Process.Pid)+`"`) || !strings.Contains(got, "uid 65534") {
		t.Errorf("while uid 65534 holds the lock (pid %d): %s", hold.Process.Pid, got)
	}
	in.Close()
	hold.Wait()
	if got := held(); got != "" {
		t.Errorf("after it let go: %s", got)
	}
}
