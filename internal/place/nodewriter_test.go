// Tests of who writes the node blocks in the node directory: root alone
// (root's fence, as carve daemon runs it), never a user's placement;
// each LS file its tenant's user's; what a user made before taken over
// in place; and a user's carve run waiting for its record and seat (AwaitSeats).

package place

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// helperOpen opens PLACE_FILE for writing, as a user's process would to
// rewrite it, and prints what happened.
func helperOpen() {
	f, err := os.OpenFile(os.Getenv("PLACE_FILE"), os.O_RDWR, 0)
	if err != nil {
		os.Stdout.WriteString("refused " + err.Error() + "\n")
		os.Exit(0)
	}
	f.Close()
	os.Stdout.WriteString("opened\n")
	os.Exit(0)
}

// owned says whether path is uid's, of mode want (type and permissions).
func owned(t *testing.T, path string, uid uint32, want os.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Sys().(*syscall.Stat_t).Uid; got != uid || st.Mode() != want {
		t.Fatalf("%s: uid %d, mode %v; want uid %d, mode %v", path, got, st.Mode(), uid, want)
	}
}

// nodeFiles are the names in dir of node blocks and their GPUs' files.
func nodeFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "node-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNodeDirOnlyRootWritesNodes: in the node directory a user's LS
// placement makes no node block (nor a BE one, once root's exists, writes
// it); the user cannot open root's node block for writing; root's fence
// makes it (root's, 0644; the GPU's directory 0755), seats the user's
// tenant, and makes its LS file that user's, mode 0644, and, for its BE
// tenant, its BE file, which the user may write and another user (65533)
// may not.
func TestNodeDirOnlyRootWritesNodes(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js}
	ls := asUser(t, bin, 65534, append(env, "PLACE_HELPER=place", "PLACE_COUNT=8", "PLACE_CLASS=ls")...)
	if !strings.HasPrefix(ls.line, "placed") {
		t.Fatalf("the user's LS placement: %q", ls.line)
	}
	defer func() { ls.in.Close(); ls.cmd.Wait() }()
	if m := nodeFiles(t, dir); len(m) != 0 {
		t.Fatalf("a user's placement made node files: %v", m)
	}
	if err := Fence(dir); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	node := filepath.Join(dir, ctl.NodeName(top.UUID))
	owned(t, node, 0, 0o644)
	owned(t, node+ctl.NodeDirSuffix, 0, os.ModeDir|0o755)
	n, err := ctl.PeekNode(dir, ctl.NodeName(top.UUID))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !n.Seated(ls.cmd.Process.Pid) {
		t.Fatalf("root's fence did not seat the user's LS tenant %d", ls.cmd.Process.Pid)
	}
	lsFile := n.LSPath(0)
	owned(t, lsFile, 65534, 0o644)

	before, err := os.ReadFile(node)
	if err != nil {
		t.Fatal(err)
	}
	be := asUser(t, bin, 65534, append(env, "PLACE_HELPER=place", "PLACE_COUNT=4", "PLACE_CLASS=be")...)
	if !strings.HasPrefix(be.line, "placed") {
		t.Fatalf("the user's BE placement: %q", be.line)
	}
	defer func() { be.in.Close(); be.cmd.Wait() }()
	if after, _ := os.ReadFile(node); !bytes.Equal(before, after) {
		t.Error("a user's placement wrote root's node block")
	}
	owned(t, node, 0, 0o644)
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	beFile := filepath.Join(node+ctl.NodeDirSuffix, ctl.BE{UID: 65534, Shared: true}.Name())
	owned(t, beFile, 65534, ctl.BEUserPerm)
	for _, c := range []struct {
		uid        int
		file, want string
	}{{65534, node, "refused"}, {65534, lsFile, "opened"}, {65533, lsFile, "refused"}, {65534, beFile, "opened"}, {65533, beFile, "refused"}} {
		h := asUser(t, bin, c.uid, "PLACE_HELPER=open", "PLACE_FILE="+c.file)
		if !strings.HasPrefix(h.line, c.want) || c.want == "refused" && !strings.Contains(h.line, "permission denied") {
			t.Errorf("uid %d opening %s for writing: %q, want %s (permission denied)", c.uid, c.file, h.line, c.want)
		}
	}
}

// TestNodeDirTakesOverUsersNodes: a node block, GPU directory and LS
// file that a user's carve made before only root's did (the block mode
// 0666, the directory 1777, all the user's) are root's at root's next
// fence, in place (the same inode: shims have them mapped), of modes 0644
// and 0755, the LS file its tenant's user's, with the seats kept; the
// GPU's one BE file of an older carve (every user's, 0666) is removed,
// and its link beside the node block.
func TestNodeDirTakesOverUsersNodes(t *testing.T) {
	dir, _ := nodeDir(t)
	top, _ := topologyJSON(t)
	p, err := Place(dir, top, Request{Spec: count(t, "8"), PID: os.Getpid(), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Block.Close()
	node := filepath.Join(dir, ctl.NodeName(top.UUID))
	d := node + ctl.NodeDirSuffix
	n, err := ctl.PeekNode(dir, ctl.NodeName(top.UUID))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	lsFile := n.LSPath(0)
	was := map[string]os.FileMode{node: 0o666, d: 0o777 | os.ModeSticky, lsFile: 0o666}
	old := filepath.Join(d, ctl.NodeBEFile)
	if err := os.WriteFile(old, make([]byte, ctl.BESize), 0o666); err != nil {
		t.Fatal(err)
	}
	oldLink := node + ctl.NodeBELink
	if err := os.Link(old, oldLink); err != nil {
		t.Fatal(err)
	}
	inodes := map[string]uint64{}
	for path, mode := range was {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		inodes[path] = st.Sys().(*syscall.Stat_t).Ino
	}
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	owned(t, node, 0, 0o644)
	owned(t, d, 0, os.ModeDir|0o755)
	for _, path := range []string{old, oldLink} {
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("the GPU's one BE file of an older carve is left: %s", path)
		}
	}
	owned(t, lsFile, 0, 0o644) // its tenant, this test, is root
	for path, ino := range inodes {
		if st, _ := os.Stat(path); st.Sys().(*syscall.Stat_t).Ino != ino {
			t.Errorf("%s was replaced, not taken over in place", path)
		}
	}
	if !n.Seated(os.Getpid()) || n.LSPath(0) != lsFile {
		t.Fatalf("the seat was not kept: seated %v, LS file %s (was %s)", n.Seated(os.Getpid()), n.LSPath(0), lsFile)
	}
}

// TestAwaitSeats: a user's carve run waits for its LS tenant's seat (root
// fences meanwhile: it goes on at the next look), and after SeatWait of
// its clock goes on unseated, with a warning that names the GPU, the node
// directory and carve daemon; a BE tenant waits for the node block.
func TestAwaitSeats(t *testing.T) {
	dir, _ := nodeDir(t)
	top, _ := topologyJSON(t)
	in := func(class uint32) ctl.Init {
		return ctl.Init{PID: os.Getpid(), Class: class,
			Parts: []ctl.Part{{GPU: top.UUID, Node: ctl.NodeName(top.UUID), Live: top.Live(), SMs: 8}}}
	}
	h, err := ctl.Create(dir, in(ctl.ClassLS)) // as a user's placement: seated by none
	if err != nil {
		t.Fatal(err)
	}
	var slept time.Duration
	sleeps := 0
	left, recorded := AwaitSeats(dir, entryOf(h), func(d time.Duration) {
		slept += d
		if sleeps++; sleeps == 5 {
			if err := Fence(dir); err != nil { // root's carve daemon
				t.Error(err)
			}
		}
	})
	if len(left) != 0 || !recorded || sleeps != 5 {
		t.Fatalf("after root seated it: %d sleeps (%v), unseated %v, recorded %v; want 5, none, true", sleeps, slept, left, recorded)
	}
	h.Remove()

	other := filepath.Join(dir, "node-other")
	for _, class := range []uint32{ctl.ClassLS, ctl.ClassBE} {
		i := in(class)
		i.Parts[0].Node = "node-other" // a GPU no node block is made for
		h, err := ctl.Create(dir, i)
		if err != nil {
			t.Fatal(err)
		}
		slept = 0
		left, recorded := AwaitSeats(dir, entryOf(h), func(d time.Duration) {
			if slept += d; slept == seatPoll {
				Fence(dir) // root's carve daemon: it makes no node-other
			}
		})
		h.Remove()
		if len(left) != 1 || left[0].GPU != top.UUID || !recorded || slept < SeatWait || slept > SeatWait+seatPoll {
			t.Fatalf("class %d never seated: unseated %v (recorded %v) after %v; want the GPU after %v", class, left, recorded, slept, SeatWait)
		}
		w := SeatWarning(dir, class, left, recorded)
		for _, want := range []string{top.UUID, "3s", dir, "'carve daemon'", "untided"} {
			if !strings.Contains(w, want) {
				t.Errorf("the warning %q does not say %q", w, want)
			}
		}
	}
	if _, err := os.Lstat(other); err == nil {
		t.Error("a node block of a name not of its GPU's UUID was made")
	}
}

// TestAwaitRecord: a user's carve run waits for root's record of its
// tenant, LS or BE, even where nothing else is missing (a BE tenant whose
// node block exists), so that the record is taken before its program can
// write its block; after SeatWait unrecorded, it warns so.
func TestAwaitRecord(t *testing.T) {
	dir, _ := nodeDir(t)
	top, _ := topologyJSON(t)
	n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live()) // root's, as its fence makes it
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Class: ctl.ClassBE,
		Parts: []ctl.Part{{GPU: top.UUID, Node: ctl.NodeName(top.UUID), Live: top.Live(), SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Remove()
	sleeps := 0
	left, recorded := AwaitSeats(dir, entryOf(h), func(time.Duration) {
		if sleeps++; sleeps == 5 {
			if err := Fence(dir); err != nil { // root's carve daemon
				t.Error(err)
			}
		}
	})
	if len(left) != 0 || !recorded || sleeps != 5 {
		t.Fatalf("a BE tenant with its node block: %d sleeps, unseated %v, recorded %v; want 5, none, true", sleeps, left, recorded)
	}
	if err := os.RemoveAll(filepath.Join(dir, ctl.TenantRecords)); err != nil {
		t.Fatal(err)
	}
	var slept time.Duration
	left, recorded = AwaitSeats(dir, entryOf(h), func(d time.Duration) { slept += d })
	if len(left) != 0 || recorded || slept < SeatWait {
		t.Fatalf("never recorded: unseated %v, recorded %v after %v; want none, false after %v", left, recorded, slept, SeatWait)
	}
	w := SeatWarning(dir, ctl.ClassBE, left, recorded)
	for _, want := range []string{"record", "3s", dir, "'carve daemon'"} {
		if !strings.Contains(w, want) {
			t.Errorf("the warning %q does not say %q", w, want)
		}
	}

	// a tenant of no class waits for its record too: one that wrote LS
	// into its block before root recorded it would be believed LS
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	none, err := ctl.Create(dir, ctl.Init{PID: sleeper.Process.Pid,
		Parts: []ctl.Part{{GPU: top.UUID, Live: top.Live(), SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Remove()
	sleeps = 0
	left, recorded = AwaitSeats(dir, entryOf(none), func(time.Duration) {
		if sleeps++; sleeps == 3 {
			if err := Fence(dir); err != nil {
				t.Error(err)
			}
		}
	})
	if len(left) != 0 || !recorded || sleeps != 3 {
		t.Fatalf("a tenant of no class: %d sleeps, unseated %v, recorded %v; want 3, none, true", sleeps, left, recorded)
	}
}

// entryOf is h's block as a listing has it.
func entryOf(h *ctl.Handle) ctl.Entry { return ctl.Entry{Snapshot: h.Snapshot(), Path: h.Path} }

// TestNodeDirBEFilePlanted: in a GPU's directory that a user's carve made
// (mode 1777, the user's) before root's fence took it over, another user
// (65533) made the name of uid 65534's BE file first: a file it holds
// open for writing, a link, a FIFO. Root's fence succeeds and puts a file
// of 65534's there, mode ctl.BEUserPerm, in place of each: the planted
// file's descriptor writes another inode, not the one the BE tenant's
// shim stamps and LS tenants read. A file of 65534's own, of one link,
// is kept (the same inode), its mode made ctl.BEUserPerm.
func TestNodeDirBEFilePlanted(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	be := asUser(t, bin, 65534, "PLACE_DIR="+dir, "PLACE_TOPOLOGY="+js, "PLACE_HELPER=place", "PLACE_COUNT=4", "PLACE_CLASS=be")
	if !strings.HasPrefix(be.line, "placed") {
		t.Fatalf("the user's BE placement: %q", be.line)
	}
	defer func() { be.in.Close(); be.cmd.Wait() }()
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, ctl.NodeName(top.UUID)) + ctl.NodeDirSuffix
	path := filepath.Join(d, ctl.BE{UID: 65534, Shared: true}.Name())
	for _, plant := range []string{"file", "link", "fifo", "own"} {
		if err := os.Chown(d, 65533, 65533); err != nil { // as a user's carve made it
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		var held *os.File
		var err error
		switch plant {
		case "file":
			if held, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666); err == nil {
				defer held.Close()
				err = held.Truncate(ctl.BESize)
			}
		case "link":
			err = os.Symlink(filepath.Join(d, "elsewhere"), path)
		case "fifo":
			err = syscall.Mkfifo(path, 0o666)
		case "own":
			err = os.WriteFile(path, make([]byte, ctl.BESize), 0o600)
		}
		owner := 65533
		if plant == "own" {
			owner = 65534
		}
		if err == nil {
			err = os.Lchown(path, owner, owner)
		}
		if err != nil {
			t.Fatal(err)
		}
		planted, _ := os.Lstat(path)
		if err := Fence(dir); err != nil {
			t.Errorf("root's fence with a %s of uid 65533's planted as uid 65534's BE file: %v", plant, err)
			continue
		}
		owned(t, path, 65534, ctl.BEUserPerm)
		if st, _ := os.Lstat(path); os.SameFile(planted, st) != (plant == "own") {
			t.Errorf("a %s of uid %d's at uid 65534's BE file: kept %v, want %v", plant, owner, os.SameFile(planted, st), plant == "own")
		}
		if held == nil {
			continue
		}
		if _, err := held.WriteAt([]byte{0xff}, ctl.BESize-1); err != nil {
			t.Fatal(err)
		}
		was, _ := held.Stat()
		st, _ := os.Stat(path)
		b, _ := os.ReadFile(path)
		if os.SameFile(was, st) || len(b) != ctl.BESize || b[ctl.BESize-1] != 0 {
			t.Errorf("uid 65533's descriptor of the file it planted still writes uid 65534's BE file %s", path)
		}
	}
}
