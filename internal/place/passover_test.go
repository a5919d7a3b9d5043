// Tests of a placement lock another user holds for good in the node
// directory: a user's placement, and root's fence, go on without it past
// PassOver, naming the holder; and of carve run's look at root's record
// of its tenant (Lost), which says where a placement made at the same
// moment was recorded first.

package place

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
)

// TestNodeDirLockPassedOver: uid 65534 holds the node directory's
// placement lock (through a read-only descriptor of root's lock file) and
// does not let it go; uid 65533's placement goes on without it after
// PassOver, saying whose hold it passed, and root's fence does too,
// recording it as placed (Lost finds nothing lost; before the fence,
// not recorded, it is not run). Root's own placement
// waits and fails, naming the holder's pid and user.
func TestNodeDirLockPassedOver(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	hold := asUser(t, bin, 65534, "PLACE_HELPER=lock", "PLACE_DIR="+dir)
	defer func() { hold.in.Close(); hold.cmd.Wait() }()
	if hold.line != "locked" {
		t.Fatalf("uid 65534 locking: %q", hold.line)
	}
	holder := "pid " + strconv.Itoa(hold.cmd.Process.Pid) + " of "
	b := asUser(t, bin, 65533, "PLACE_DIR="+dir, "PLACE_TOPOLOGY="+js, "PLACE_HELPER=place", "PLACE_COUNT=8")
	defer func() { b.in.Close(); b.cmd.Wait() }()
	placedSet(t, "uid 65533 beside the held lock", b.line)
	if !strings.Contains(b.line, "past the lock of "+holder) || !strings.Contains(b.line, "uid 65534") {
		t.Errorf("uid 65533's placement does not name the holder (%s, uid 65534): %q", holder, b.line)
	}
	e := entryAt(t, blockOf(dir, b.cmd.Process.Pid))
	// not recorded yet: placed past the lock, it is not run; placed under it, it is
	if err := Lost(dir, e, false, true); err == nil || !strings.Contains(err.Error(), "not recorded") {
		t.Errorf("the placement past the lock, not recorded yet: %v; want it not run", err)
	}
	if err := Lost(dir, e, false, false); err != nil {
		t.Errorf("a placement under the lock, not recorded yet: %v", err)
	}
	if err := Fence(dir, top); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	if err := Lost(dir, e, false, true); err != nil {
		t.Errorf("the placement past the lock, alone: %v", err)
	}
	recorded(t, dir, b.cmd.Process.Pid)

	was := Timeout
	Timeout = 100 * time.Millisecond
	t.Cleanup(func() { Timeout = was })
	_, err := Place(dir, top, Request{Spec: count(t, "4"), PID: os.Getpid()})
	if err == nil || !strings.Contains(err.Error(), holder) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("root's placement beside the held lock: %v; want it refused, naming %s(uid 65534)", err, holder)
	}
}

// TestLockHolderGoneStillPassed: a hold the kernel's table of locks
// names by a process that has exited (flock(1) took it on a descriptor
// its shell keeps open, as a user's process can that leaves its lock to
// a child) is passed over by a user's placement after PassOver, naming
// no pid; without pass it is waited for and refused.
func TestLockHolderGoneStillPassed(t *testing.T) {
	dir, _ := nodeDir(t)
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) here")
	}
	f, _, err := ctl.OpenLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command("bash", "-c", `exec 9<"$1" && "$2" -x 9 && echo locked && exec sleep 60`, "-", filepath.Join(dir, LockFile), flock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("flock(1): %q", line)
	}
	was := PassOver
	PassOver = 50 * time.Millisecond
	t.Cleanup(func() { PassOver = was })
	unlock, held, err := lockOrPass(dir, 5*time.Second, true)
	if err != nil {
		t.Fatalf("a placement beside a lock of an exited holder: %v", err)
	}
	unlock()
	if !strings.Contains(held, "not known") {
		t.Errorf("the holder passed over: %q, want one not known here", held)
	}
	if _, _, err := lockOrPass(dir, 200*time.Millisecond, false); err == nil {
		t.Errorf("without pass, the same hold was not waited for")
	}
}

// entryAt is the block at path as a listing has it.
func entryAt(t *testing.T, path string) ctl.Entry {
	t.Helper()
	h, err := ctl.OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return ctl.Entry{Snapshot: h.Snapshot(), Path: h.Path}
}

// TestNodeDirLostRace: uid 65534's block, made by hand before uid 65533's
// placement and then rewritten through a mapping it wrote before (which
// moves none of its file's times), to every TPC, is recorded first by
// root's fence, with the TPCs 65533's placement chose: carve run's look
// at its record (Lost) says so, and its program would not run; with
// --share it would (its bandwidth slots are its own). The node directory
// is on tmpfs, as /run is, whose mapped pages are never written back.
func TestNodeDirLostRace(t *testing.T) {
	_, bin := nodeDir(t)
	top, js := topologyJSON(t)
	base, err := os.MkdirTemp("/dev/shm", "carve-node-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "node")
	if err := ctl.InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	pid := sleepers(t, 1)[0].Process.Pid
	mask, err := partition.Mask(top, partition.Set{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Parts: []ctl.Part{{GPU: top.UUID, Mask: mask, Live: top.Live(), SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := os.Chown(blockOf(dir, pid), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(blockOf(dir, pid), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, ctl.Size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	block := (*ctl.Block)(unsafe.Pointer(&m[0]))
	block.Mask = mask // written once: its page is mapped for writing from now on

	b := asUser(t, bin, 65533, "PLACE_DIR="+dir, "PLACE_TOPOLOGY="+js, "PLACE_HELPER=place", "PLACE_COUNT=8")
	defer func() { b.in.Close(); b.cmd.Wait() }()
	if sb := placedSet(t, "uid 65533", b.line); overlap(sb, partition.Set{0, 1, 2, 3}) {
		t.Fatalf("uid 65533 placed on %v, beside the block made by hand's 0-3", sb)
	}
	e := entryAt(t, blockOf(dir, b.cmd.Process.Pid))
	was := changedAt(t, blockOf(dir, pid))
	block.Mask = [4]uint32{} // every TPC
	if changedAt(t, blockOf(dir, pid)) != was {
		t.Fatal("the write through the mapping moved the block's change time")
	}
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	if err := Lost(dir, e, false, false); err == nil || !strings.Contains(err.Error(), "run it again") {
		t.Errorf("the placement recorded after the block made by hand took its TPCs: %v", err)
	}
	if err := Lost(dir, e, true, false); err != nil {
		t.Errorf("the same placement with --share: %v", err)
	}
}
