// Tests of the node directory's trust checks, of the directory and of
// its placement lock, on a stat the test makes (no root needed), and, as
// root, of Dir choosing it, refusing one root did not make and making it
// (InitNodeDir), and of the modes of what carve makes in it.

package ctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/topo"
)

// TestTrustNodeDir: a directory of root's with the sticky bit that the
// caller may write is trusted; a link, a file, one of another owner's,
// one without the sticky bit, and one the caller may not write are each
// refused, naming what is wrong.
func TestTrustNodeDir(t *testing.T) {
	const sticky = os.ModeDir | os.ModeSticky
	for _, c := range []struct {
		name   string
		st     NodeDirStat
		uid    int
		groups []int
		want   string // "" trusted, else a piece of the error
	}{
		{"1777 root", NodeDirStat{Mode: sticky | 0o777}, 1000, nil, ""},
		{"1777 root, as root", NodeDirStat{Mode: sticky | 0o777}, 0, nil, ""},
		{"1770 of the user's group", NodeDirStat{Mode: sticky | 0o770, GID: 50}, 1000, []int{7, 50}, ""},
		{"1770 of another group", NodeDirStat{Mode: sticky | 0o770, GID: 50}, 1000, []int{7}, "uid 1000"},
		{"1770 of another group, as root", NodeDirStat{Mode: sticky | 0o770, GID: 50}, 0, nil, ""},
		{"1755 root", NodeDirStat{Mode: sticky | 0o755}, 1000, nil, "does not let"},
		{"a link", NodeDirStat{Mode: os.ModeSymlink | 0o777}, 1000, nil, "is a symbolic link"},
		{"a file", NodeDirStat{Mode: 0o1777}, 1000, nil, "is not a directory"},
		{"a user's", NodeDirStat{Mode: sticky | 0o777, UID: 1001}, 1000, nil, "not root (mode 1777)"},
		{"the caller's own", NodeDirStat{Mode: sticky | 0o777, UID: 1000}, 1000, nil, "not root (mode 1777)"},
		{"0777 root", NodeDirStat{Mode: os.ModeDir | 0o777}, 1000, nil, "mode 0777, without the sticky bit"},
		{"0755 root", NodeDirStat{Mode: os.ModeDir | 0o755}, 0, nil, "without the sticky bit"},
	} {
		err := trustNodeDir("/n", c.st, c.uid, c.groups)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: trusted", c.name)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		case c.want != "" && !strings.Contains(err.Error(), "/n"):
			t.Errorf("%s: %v names no directory", c.name, err)
		}
	}
}

// TestTrustLock: the placement lock of a shared directory is locked where
// it is a regular file of root's or of the directory's owner, whom alone
// the sticky bit lets remove it; one of another user's, a directory or a
// FIFO is refused, naming the lock and the fix.
func TestTrustLock(t *testing.T) {
	for _, c := range []struct {
		name   string
		st     NodeDirStat
		dirUID uint32
		want   string // "" trusted, else a piece of the error
	}{
		{"root's, in root's directory", NodeDirStat{Mode: 0o644}, 0, ""},
		{"root's, in a user's directory", NodeDirStat{Mode: 0o644}, 1000, ""},
		{"the directory owner's", NodeDirStat{Mode: 0o644, UID: 1000}, 1000, ""},
		{"a user's, in root's directory", NodeDirStat{Mode: 0o644, UID: 1000}, 0, "not root"},
		{"a user's, in another user's directory", NodeDirStat{Mode: 0o600, UID: 1001}, 1000, "not root"},
		{"a directory", NodeDirStat{Mode: os.ModeDir | 0o755}, 0, "not a regular file"},
		{"a FIFO", NodeDirStat{Mode: os.ModeNamedPipe | 0o666}, 0, "not a regular file"},
	} {
		err := trustLock("/n/.place.lock", c.st, c.dirUID)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: trusted", c.name)
		case c.want != "" && (!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/n/.place.lock") ||
			!strings.Contains(err.Error(), "sudo carve node init")):
			t.Errorf("%s: %v, want it to say %q, name the lock and the fix", c.name, err, c.want)
		}
	}
}

// TestDirWithoutNodeDir: where the node directory does not exist, Dir is
// the user's own directory, as it was before there was one.
func TestDirWithoutNodeDir(t *testing.T) {
	t.Setenv("CARVE_RUNTIME_DIR", "")
	t.Setenv("CARVE_NODE_DIR", filepath.Join(t.TempDir(), "none"))
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(d, "/carve-"+strconv.Itoa(os.Getuid())) {
		t.Fatalf("Dir = %s, want the user's own carve-UID", d)
	}
	if Shared(d) || BlockPerm(d) != 0o600 {
		t.Fatalf("the user's own directory is shared, or makes blocks of mode %o", BlockPerm(d))
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node directory is root's, and the test makes files of other users")
	}
}

// TestNodeDirAsRoot: InitNodeDir makes a directory Dir uses, where blocks
// are made 0644 and node blocks root's 0644 (the GPU's directory 0755, its
// BE file 0666); Dir refuses, with the fix, a
// placement lock of a user's, a node directory of a user's, one without
// the sticky bit and a link, and never falls back to the user's own;
// root's Dir makes a lock that is missing; InitNodeDir refuses to adopt a
// directory of a user's.
func TestNodeDirAsRoot(t *testing.T) {
	needRoot(t)
	t.Setenv("CARVE_RUNTIME_DIR", "")
	base := t.TempDir()
	nd := filepath.Join(base, "node")
	t.Setenv("CARVE_NODE_DIR", nd)
	if err := InitNodeDir(nd, -1); err != nil {
		t.Fatal(err)
	}
	if err := InitNodeDir(nd, -1); err != nil {
		t.Fatalf("made again: %v", err)
	}
	d, err := Dir()
	if err != nil || d != nd {
		t.Fatalf("Dir = %s, %v; want %s", d, err, nd)
	}
	st, _ := os.Stat(nd)
	if st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Fatalf("node directory of mode %v", st.Mode())
	}
	if st, err := os.Stat(filepath.Join(nd, LockName)); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("placement lock: %v, %v", st, err)
	}
	h, err := Create(nd, Init{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if st, _ := os.Stat(h.Path); st.Mode().Perm() != 0o644 {
		t.Fatalf("a block in the node directory of mode %v, want 0644", st.Mode())
	}
	n, err := OpenNode(nd, NodeName("GPU-0"), topo.Enable{0xff})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	for path, want := range map[string]os.FileMode{n.Path: 0o644, n.Path + NodeDirSuffix: os.ModeDir | 0o755} {
		if st, err := os.Lstat(path); err != nil || st.Mode() != want || nodeDirStat(st).UID != 0 {
			t.Fatalf("%s in the node directory: %v, %v; want root's, mode %v", path, st, err, want)
		}
	}

	refused := func(what, want string) {
		t.Helper()
		d, err := Dir()
		if err == nil {
			t.Fatalf("%s: Dir = %s", what, d)
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), nd) {
			t.Fatalf("%s: %v, want it to say %q and name %s", what, err, want, nd)
		}
	}
	lock := filepath.Join(nd, LockName)
	if err := os.Chown(lock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	refused("a lock of a user's", "placement lock")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if d, err := Dir(); err != nil || d != nd {
		t.Fatalf("Dir without the lock, as root: %s, %v", d, err)
	}
	if st, err := os.Lstat(lock); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 || nodeDirStat(st).UID != 0 {
		t.Fatalf("the placement lock root's carve made: %v, %v", st, err)
	}
	os.Chown(nd, 65534, 65534)
	refused("a user's", "owned by")
	if err := InitNodeDir(nd, -1); err == nil || !strings.Contains(err.Error(), "not a directory of root's") {
		t.Fatalf("InitNodeDir adopted a user's directory: %v", err)
	}
	os.Chown(nd, 0, 0)
	os.Chmod(nd, 0o777)
	refused("no sticky bit", "without the sticky bit")
	os.Rename(nd, nd+".real")
	os.Symlink(nd+".real", nd)
	refused("a link", "symbolic link")
}
