// Tests of placement in the node directory, one runtime directory of two
// users (uids 65534 and 65533, helper processes of the test binary run
// with their credentials): neither's placement overlaps the other's, each
// lists both, neither may move the other's tenant, and a tenant of one
// that ended frees its TPCs for the other though its block stays.

package place

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// helperList prints the pids of PLACE_DIR's live blocks.
func helperList() {
	l, err := ctl.List(os.Getenv("PLACE_DIR"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var pids []string
	for _, e := range l {
		pids = append(pids, strconv.Itoa(e.PID))
	}
	fmt.Println("live", strings.Join(pids, ","))
	os.Exit(0)
}

// helperMove moves PLACE_PID's tenant to PLACE_COUNT TPCs, as carve set,
// or onto the TPCs PLACE_TPCS with --share.
func helperMove() {
	t, err := topo.Parse([]byte(os.Getenv("PLACE_TOPOLOGY")))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	spec, _ := partition.ParseCount(os.Getenv("PLACE_COUNT"))
	if tpcs := os.Getenv("PLACE_TPCS"); tpcs != "" { // these TPCs, shared
		spec, _ = partition.ParseTPCs(tpcs)
	}
	pid, _ := strconv.Atoi(os.Getenv("PLACE_PID"))
	if _, err := Move(os.Getenv("PLACE_DIR"), t, pid, spec, os.Getenv("PLACE_TPCS") != ""); err != nil {
		fmt.Println("refused", err)
	} else {
		fmt.Println("moved")
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// helperSetMem sets the memory limit of PLACE_PID's tenant to PLACE_MEM
// (SetMemory), as carve set --mem does, and says "set" or why not.
func helperSetMem() {
	t, err := topo.Parse([]byte(os.Getenv("PLACE_TOPOLOGY")))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	lim, _ := ctl.ParseMemLimit(os.Getenv("PLACE_MEM"))
	pid, _ := strconv.Atoi(os.Getenv("PLACE_PID"))
	if _, err := SetMemory(os.Getenv("PLACE_DIR"), t, pid, lim, false, nil); err != nil {
		fmt.Println("refused", err)
	} else {
		fmt.Println("set")
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// asUser runs the test binary as helper (PLACE_HELPER) with uid and gid
// uid, from bin, a copy every user may run.
func asUser(t *testing.T, bin string, uid int, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Env = append(os.Environ(), env...)
	return runHelper(t, cmd)
}

// nodeDir makes a node directory as carve node init does, and a copy of
// the test binary that every user may run.
func nodeDir(t *testing.T) (dir, bin string) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs processes of two other users")
	}
	base, err := os.MkdirTemp("", "carve-node-test")
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
	bin = filepath.Join(base, "place.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

func placedSet(t *testing.T, who, line string) partition.Set {
	t.Helper()
	s, ok := strings.CutPrefix(line, "placed ")
	if !ok {
		t.Fatalf("%s: %s", who, line)
	}
	s, _, _ = strings.Cut(s, " past the lock of ")
	set, err := partition.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestNodeDirTwoUsers: in the node directory, uid 65534's tenant and
// uid 65533's are placed apart, each user lists both, each is refused
// moving the other's with the owner named, and when 65534's tenant ends
// its block (which 65533 may not remove) holds no TPCs: 65533 is given
// every TPC but its own.
func TestNodeDirTwoUsers(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js}
	a := asUser(t, bin, 65534, append(env, "PLACE_HELPER=place", "PLACE_COUNT=8")...)
	b := asUser(t, bin, 65533, append(env, "PLACE_HELPER=place", "PLACE_COUNT=8")...)
	sa, sb := placedSet(t, "uid 65534", a.line), placedSet(t, "uid 65533", b.line)
	for _, x := range sa {
		for _, y := range sb {
			if x == y {
				t.Fatalf("the users' placements overlap: %v and %v", sa, sb)
			}
		}
	}
	pa, pb := a.cmd.Process.Pid, b.cmd.Process.Pid
	for _, p := range []string{strconv.Itoa(pa), strconv.Itoa(pb)} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil || st.Mode().Perm() != 0o644 {
			t.Fatalf("block %s: %v, %v; want mode 0644", p, st, err)
		}
	}
	both := fmt.Sprintf("live %d,%d", min(pa, pb), max(pa, pb))
	for _, uid := range []int{65534, 65533} {
		if l := asUser(t, bin, uid, append(env, "PLACE_HELPER=list")...); l.line != both {
			t.Errorf("uid %d lists %q, want %q", uid, l.line, both)
		}
	}
	for _, c := range []struct{ uid, pid int }{{65533, pa}, {65534, pb}} {
		m := asUser(t, bin, c.uid, append(env, "PLACE_HELPER=move", "PLACE_COUNT=4", "PLACE_PID="+strconv.Itoa(c.pid))...)
		want := fmt.Sprintf("refused permission denied: pid %d is ", c.pid)
		if !strings.HasPrefix(m.line, want) || !strings.Contains(m.line, "only that user and root may change it") {
			t.Errorf("uid %d moving pid %d: %q, want %q...", c.uid, c.pid, m.line, want)
		}
	}

	a.in.Close()
	a.cmd.Wait()
	rest := strconv.Itoa(len(top.TPCs) - len(sb))
	c := asUser(t, bin, 65533, append(env, "PLACE_HELPER=place", "PLACE_COUNT="+rest)...)
	if sc := placedSet(t, "uid 65533 after 65534's tenant ended", c.line); len(sc) != len(top.TPCs)-len(sb) {
		t.Fatalf("given %v", sc)
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(pa))); err != nil {
		t.Fatalf("uid 65534's ended block, which uid 65533 may not remove: %v", err)
	}
	if _, err := ctl.List(dir); err != nil { // root, as carve daemon: removes it
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(pa))); err == nil {
		t.Fatal("root's listing left the ended block")
	}
}

// TestNodeDirLockRootOnly: in a node directory without its placement
// lock (root made it by hand), a user's placement is refused, naming
// carve node init, and makes no lock of its own, which that user could
// remove and make anew under the others; root's carve makes it, root's.
// A lock of a user's, however it came, is refused to the other users.
func TestNodeDirLockRootOnly(t *testing.T) {
	dir, bin := nodeDir(t)
	_, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place", "PLACE_COUNT=4"}
	lock := filepath.Join(dir, LockFile)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if h := asUser(t, bin, 65534, env...); !strings.HasPrefix(h.line, "refused") || !strings.Contains(h.line, "sudo carve node init") {
		t.Errorf("a user's placement without the lock: %q", h.line)
	}
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Fatalf("a user's placement made the lock: %v", err)
	}
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	st, err := os.Lstat(lock)
	if err != nil || st.Mode().Perm() != 0o644 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("the lock root's carve made: %v, %v", st, err)
	}
	if h := asUser(t, bin, 65534, env...); !strings.HasPrefix(h.line, "placed") {
		t.Errorf("a user's placement beside root's lock: %q", h.line)
	}
	if err := os.Chown(lock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if h := asUser(t, bin, 65533, env...); !strings.HasPrefix(h.line, "refused") || !strings.Contains(h.line, "not root") {
		t.Errorf("a placement beside a lock of another user's: %q", h.line)
	}
}
