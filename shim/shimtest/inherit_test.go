// The block the shim makes for a child process (shim/ctl.c): a copy of
// its parent's, or of CARVE_CTL_ROOT's, under its own pid, that holds the
// parent's value of every field carve_ctl.h marks INHERIT, of the mode
// carve gives its own blocks there; and a claim's root as the one memory
// account of its processes, whatever their uids.

package shimtest_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// fieldKinds reads what the block of a child process takes of each field
// of the control block, as CARVE_CTL_FIELDS in shim/carve_ctl.h says
// (through the layout program): INHERIT, OWN, STATUS or UNUSED, by field.
func fieldKinds(t testing.TB) map[string]string {
	out, err := exec.Command(artifacts(t).Layout).Output()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "kind" {
			kinds[f[1]] = f[2]
		}
	}
	if len(kinds) == 0 {
		t.Fatalf("the layout program lists no field's kind:\n%s", out)
	}
	return kinds
}

// field is one field of the control block: its name, kind and place.
type field struct {
	name, kind string
	off, size  uintptr
}

// blockFields lists the control block's fields from the headers, each
// with its kind; a field without one fails the test.
func blockFields(t testing.TB) []field {
	layout, _ := shimtest.Layout(t)
	kinds := fieldKinds(t)
	var fs []field
	for name, at := range layout[""] {
		if name == "sizeof" {
			continue
		}
		k := kinds[name]
		switch k {
		case "INHERIT", "OWN", "STATUS", "UNUSED":
		default:
			t.Errorf("field %s: kind %q in CARVE_CTL_FIELDS, want INHERIT, OWN, STATUS or UNUSED", name, k)
		}
		fs = append(fs, field{name, k, at[0], at[1]})
	}
	slices.SortFunc(fs, func(a, b field) int { return cmp.Compare(a.off, b.off) })
	return fs
}

// pattern is what the test writes into field i of a parent's block: no
// byte zero, none ASCII, each field's its own.
func pattern(i int, size uintptr) []byte {
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(0x80 | (i*31+j*7)%127)
	}
	return b
}

// untouched are the fields that make the file a block the shim reads: the
// test leaves them as carve wrote them.
var untouched = map[string]bool{"magic": true, "version": true, "size": true, "gen": true}

// fillBlock writes a pattern into every other field of the block at path.
func fillBlock(t testing.TB, path string, fs []field) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0) // in place: the shim has it mapped
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, fl := range fs {
		if untouched[fl.name] {
			continue
		}
		if _, err := f.WriteAt(pattern(i, fl.size), int64(fl.off)); err != nil {
			t.Fatal(err)
		}
	}
}

// compareBlocks checks the block the shim made for the process childPID
// against its parent's, field by field, by kind.
func compareBlocks(t *testing.T, parent, child []byte, childPID int, fs []field) {
	t.Helper()
	for _, f := range fs {
		p, c := parent[f.off:f.off+f.size], child[f.off:f.off+f.size]
		switch {
		case f.kind == "INHERIT":
			if !bytes.Equal(c, p) {
				t.Errorf("field %s (INHERIT in carve_ctl.h): the child's block has % x, its parent's % x", f.name, c, p)
			}
		case f.kind == "UNUSED":
			if !bytes.Equal(c, make([]byte, f.size)) {
				t.Errorf("field %s (UNUSED in carve_ctl.h): the child's block has % x, want zero", f.name, c)
			}
		case f.name == "gen":
			if g := binary.LittleEndian.Uint64(c); g == 0 || g&1 != 0 {
				t.Errorf("the child's block has generation %d, want an even one", g)
			}
		case untouched[f.name]:
			if !bytes.Equal(c, p) {
				t.Errorf("field %s: the child's block has % x, its parent's % x", f.name, c, p)
			}
		case bytes.Equal(c, p):
			t.Errorf("field %s (%s in carve_ctl.h): the child's block has its parent's value % x", f.name, f.kind, c)
		case f.name == "pid":
			if got := binary.LittleEndian.Uint32(c); got != uint32(childPID) {
				t.Errorf("the child's block has pid %d, want %d", got, childPID)
			}
		}
	}
}

// TestChildInheritsEveryField: the block the shim makes for a child process
// (its parent's copied, or CARVE_CTL_ROOT's) holds the parent's value of
// every field carve_ctl.h marks INHERIT and none of the others. Every field
// but the block's magic, version, size and generation is first given a
// value of its own in the parent's block; the fields and their kinds come
// from the header, so a field added there is checked the moment it is.
func TestChildInheritsEveryField(t *testing.T) {
	fs := blockFields(t)
	t.Run("parent", func(t *testing.T) {
		dir := t.TempDir()
		p, h := startExec(t, dir, ctl.Init{Comm: []string{"driver"}, Parts: []ctl.Part{{Mask: enableOnly(0), Live: live}}})
		p.ready(t)
		fillBlock(t, h.Path, fs)
		parent, err := os.ReadFile(h.Path)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Fields(p.ask(t, "spawn quit"))
		if len(got) != 4 || got[0] != "child" || got[2] != "0" || got[3] != "ready" {
			t.Fatalf("spawn: %q, want a child that started and quit; stderr: %s", got, p.stderr)
		}
		pid, _ := strconv.Atoi(got[1])
		child, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(pid)))
		if err != nil {
			t.Fatalf("the child's block: %v", err)
		}
		compareBlocks(t, parent, child, pid, fs)
		p.wait(t)
	})
	t.Run("root", func(t *testing.T) {
		a := artifacts(t)
		cd := filepath.Join(t.TempDir(), "claim")
		if err := os.Mkdir(cd, 0o700); err != nil {
			t.Fatal(err)
		}
		root, err := ctl.CreateClaimRoot(cd, ctl.Init{Comm: []string{"claim", "ns/name"}, Parts: []ctl.Part{{Mask: enableOnly(0), Live: live}}})
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		fillBlock(t, root.Path, fs)
		parent, err := os.ReadFile(root.Path)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(a.Driver)
		cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + cd, "CARVE_LIBCUDA=" + a.Fake, "CARVE_CTL_ROOT=" + root.Path}
		cmd.Stdin = strings.NewReader("quit\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		child, err := os.ReadFile(filepath.Join(cd, strconv.Itoa(cmd.Process.Pid)))
		if err != nil {
			t.Fatalf("the child's block: %v", err)
		}
		compareBlocks(t, parent, child, cmd.Process.Pid, fs)
	})
}

// A process without a block of its own (a child of the partitioned one)
// gets a copy of its parent's, or of CARVE_CTL_ROOT's, under its own pid.
func TestShimChildGetsOwnBlock(t *testing.T) {
	a := artifacts(t)
	dir := t.TempDir()
	mask := enableOnly(1, 9)
	tide := ctl.Tide{InflightMax: 3, Queue: 250 * time.Microsecond, Share: 0.25, Epoch: 7 * time.Millisecond}
	root, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Class: ctl.ClassBE, Tide: tide, Comm: []string{"parent"},
		Parts: []ctl.Part{{Node: "node-none", Mask: mask, Live: live, SMs: 4}}})
	tide.Node = "node-none" // as the block gives it back
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	cmd := exec.Command(a.Driver)
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + dir, "CARVE_LIBCUDA=" + a.Fake, "CARVE_CTL_ROOT=" + root.Path}
	cmd.Stdin = strings.NewReader("launch 0x40\nlaunch 0x40\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := fmt.Sprintf("mask %08x %08x %08x %08x 1 1", mask[0], mask[1], mask[2], mask[3])
	if !strings.Contains(string(out), want) {
		t.Fatalf("output %q lacks %q", out, want)
	}
	child, err := ctl.Open(dir, cmd.Process.Pid)
	if err != nil {
		t.Fatalf("child block: %v", err)
	}
	defer child.Close()
	s := child.Snapshot()
	if s.Mask != mask || s.Live != live || s.Launches != 2 || s.PID != cmd.Process.Pid || s.SMs != 4 ||
		s.Class != ctl.ClassBE || s.Tide != tide || s.Tenant != os.Getpid() {
		t.Errorf("child block %+v, want the parent's partition, class and tide policy %+v", s, tide)
	}
	if len(s.Command) == 0 || !strings.HasSuffix(s.Command[0], "driver") {
		t.Errorf("child command %q", s.Command)
	}
	if r := root.Snapshot(); r.Launches != 0 {
		t.Errorf("root block counted %d launches of the child", r.Launches)
	}
	// ls drops the child's block now that it has exited
	entries, err := ctl.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.PID == cmd.Process.Pid {
			t.Errorf("List kept the exited child %d", e.PID)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(cmd.Process.Pid))); !os.IsNotExist(err) {
		t.Errorf("exited child's block still on disk: %v", err)
	}
}

// TestClaimAccountSharedAcrossUIDs: two processes of one claim under
// other uids (a pod's containers may run as any) count their memory in
// the claim's one account, its root, which carve makes writable by all of
// them (mode 0666): the second's allocation past the claim's limit is
// refused. With a root of 0644 each counted in its own block, and both
// got what they asked for. It needs root, to run them as other uids.
func TestClaimAccountSharedAcrossUIDs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs the claim's processes as other uids: needs root")
	}
	a := artifacts(t)
	if err := os.Chmod(a.Dir, 0o755); err != nil { // other uids load the shim and the driver from it
		t.Fatal(err)
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755) // the test's directory, then its own
	os.Chmod(base, 0o755)
	cd := filepath.Join(base, "claim")
	os.Mkdir(cd, 0o755)
	if err := os.Chmod(cd, 0o777|os.ModeSticky); err != nil { // as place makes a claim's directory
		t.Fatal(err)
	}
	root, err := ctl.CreateClaimRoot(cd, ctl.Init{MemLimit: 100 * mib, Comm: []string{"claim", "ns/a"}, Parts: []ctl.Part{{Mask: enableOnly(0), Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var procs []*proc
	for _, uid := range []uint32{65534, 65533} {
		cmd := exec.Command(a.Driver)
		cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + cd, "CARVE_LIBCUDA=" + a.Fake, "CARVE_CTL_ROOT=" + root.Path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		procs = append(procs, startCmd(t, cmd))
	}
	if _, rc := procs[0].alloc(t, "mem", 60*mib); rc != 0 {
		t.Fatalf("the first process's 60 MiB of the claim's 100: rc %d; stderr: %s", rc, procs[0].stderr)
	}
	if _, rc := procs[1].alloc(t, "mem", 60*mib); rc != 2 {
		t.Errorf("the second process's 60 MiB, under another uid, past the claim's 100: rc %d, want 2", rc)
	}
	if _, rc := procs[1].alloc(t, "mem", 40*mib); rc != 0 {
		t.Errorf("the second process's 40 MiB, up to the claim's 100: rc %d", rc)
	}
	if m := root.Snapshot().Memory; m.Total != 100*mib {
		t.Errorf("the claim's account: %+v, want 100 MiB of both processes", m)
	}
	for _, p := range procs {
		p.in.Close()
		p.cmd.Wait()
	}
}

// TestChildBlockInNodeDir: in the node directory (root's, mode 1777), a
// tenant's process of another uid than carve's (65534) that has no block
// of its own makes one from its tenant's block of mode 0644, as carve
// makes blocks there: its own, mode 0644, which others read, and in which
// it counts its launches. It needs root, to run it as another uid.
func TestChildBlockInNodeDir(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs the tenant's process as another uid: needs root")
	}
	a := artifacts(t)
	if err := os.Chmod(a.Dir, 0o755); err != nil { // other uids load the shim and the driver from it
		t.Fatal(err)
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(base, 0o755)
	nd := filepath.Join(base, "node")
	if err := ctl.InitNodeDir(nd, -1); err != nil {
		t.Fatal(err)
	}
	mask := enableOnly(2, 3)
	root, err := ctl.Create(nd, ctl.Init{PID: os.Getpid(), Comm: []string{"tenant"}, Parts: []ctl.Part{{Mask: mask, Live: live, SMs: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if st, _ := os.Stat(root.Path); st.Mode().Perm() != 0o644 {
		t.Fatalf("carve's block in the node directory: mode %v, want 0644", st.Mode())
	}
	cmd := exec.Command(a.Driver)
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + nd, "CARVE_LIBCUDA=" + a.Fake, "CARVE_CTL_ROOT=" + root.Path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stdin = strings.NewReader("launch 0x40\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := fmt.Sprintf("mask %08x %08x %08x %08x", mask[0], mask[1], mask[2], mask[3]); !strings.Contains(string(out), want) {
		t.Fatalf("output %q lacks %q", out, want)
	}
	path := filepath.Join(nd, strconv.Itoa(cmd.Process.Pid))
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the process's own block: %v", err)
	}
	if sys := st.Sys().(*syscall.Stat_t); st.Mode().Perm() != 0o644 || sys.Uid != 65534 {
		t.Fatalf("the process's own block: mode %v of uid %d, want 0644 of 65534", st.Mode(), sys.Uid)
	}
	child, err := ctl.OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if s := child.Snapshot(); s.Launches != 1 || s.Mask != mask {
		t.Errorf("the process's own block: %d launches, mask %v; want 1, %v", s.Launches, s.Mask, mask)
	}
}

// TestShimBlockPerm: the block a process's shim makes for itself has the
// mode carve gives its own blocks in that directory (ctl.BlockPerm): 0600
// in a user's own, 0644 in one with the sticky bit, which others read. The
// rule has two homes, shim/ctl.c and internal/ctl/nodedir.go; this checks
// they agree without root.
func TestShimBlockPerm(t *testing.T) {
	a := artifacts(t)
	for _, mode := range []os.FileMode{0o700, 0o777 | os.ModeSticky} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		root, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Comm: []string{"tenant"}, Parts: []ctl.Part{{Mask: enableOnly(2, 3), Live: live, SMs: 4}}})
		if err != nil {
			t.Fatal(err)
		}
		root.Close()
		cmd := exec.Command(a.Driver)
		cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + dir, "CARVE_LIBCUDA=" + a.Fake, "CARVE_CTL_ROOT=" + root.Path}
		cmd.Stdin = strings.NewReader("launch 0x40\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		want := ctl.BlockPerm(dir)
		for who, path := range map[string]string{"carve's": root.Path, "the shim's": filepath.Join(dir, strconv.Itoa(cmd.Process.Pid))} {
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
				t.Errorf("in a directory of mode %v, %s block: %v %v, want mode %v (ctl.BlockPerm)", mode, who, st, err, want)
			}
		}
	}
}
