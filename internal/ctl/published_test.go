// Tests of the claims published in the node directory: the trust check of
// their directory, on a stat the test makes (no root needed), and, as
// root, InitNodeDir making it and Publish replacing one of a user's.

package ctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustPublished: the directory of published claims is trusted where
// it is a directory of root's that neither its group nor others may
// write; a link, a file, one of a user's and one others may write are
// each refused, naming what is wrong.
func TestTrustPublished(t *testing.T) {
	for _, c := range []struct {
		name string
		st   NodeDirStat
		want string
	}{
		{"0755 root", NodeDirStat{Mode: os.ModeDir | 0o755}, ""},
		{"0700 root", NodeDirStat{Mode: os.ModeDir | 0o700}, ""},
		{"a link", NodeDirStat{Mode: os.ModeSymlink | 0o777}, "symbolic link"},
		{"a file", NodeDirStat{Mode: 0o644}, "not a directory"},
		{"a user's", NodeDirStat{Mode: os.ModeDir | 0o755, UID: 1000}, "not root"},
		{"1777 root", NodeDirStat{Mode: os.ModeDir | os.ModeSticky | 0o777}, "others may write"},
		{"0775 root", NodeDirStat{Mode: os.ModeDir | 0o775}, "others may write"},
	} {
		err := trustPublished("/n/dra-claims", c.st)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		}
	}
}

// TestPublishedDirAsRoot: carve node init makes the directory of
// published claims, root's, mode 0755; Publish replaces one a user made
// (before carve node init did), a directory or a link, with root's,
// leaving what the link names alone, and publishes every recorded claim
// in it.
func TestPublishedDirAsRoot(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	nd := filepath.Join(base, "node")
	if err := InitNodeDir(nd, -1); err != nil {
		t.Fatal(err)
	}
	pd := filepath.Join(nd, PublishedDir)
	st, err := os.Lstat(pd)
	if err != nil || trustPublished(pd, nodeDirStat(st)) != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("carve node init's %s: %v, %v", pd, st, err)
	}
	os.Chown(pd, 65534, 65534)
	os.WriteFile(filepath.Join(pd, "uid-forged"), make([]byte, Size), 0o644)
	rd := filepath.Join(base, "run")
	os.Mkdir(rd, 0o700)
	if err := RecordClaim(rd, "uid-a", Init{Comm: []string{"claim", "ns/a"}}); err != nil {
		t.Fatal(err)
	}
	if err := Publish(rd, nd); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(pd, "*"))
	if st, err = os.Lstat(pd); err != nil || trustPublished(pd, nodeDirStat(st)) != nil || len(names) != 1 || filepath.Base(names[0]) != "uid-a" {
		t.Fatalf("after Publish: %v, %v; holds %v, want uid-a alone", st, err, names)
	}

	// a link a user made in its place: replaced, what it names untouched
	victim := filepath.Join(base, "victim")
	os.Mkdir(victim, 0o700)
	os.RemoveAll(pd)
	if err := os.Symlink(victim, pd); err != nil {
		t.Fatal(err)
	}
	os.Lchown(pd, 65534, 65534)
	if err := Publish(rd, nd); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("what the link named: %v, %v; want it untouched, mode 0700", st, err)
	}
	if names, _ := filepath.Glob(filepath.Join(victim, "*")); len(names) != 0 {
		t.Errorf("published through the link: %v", names)
	}
	if st, err = os.Lstat(pd); err != nil || trustPublished(pd, nodeDirStat(st)) != nil {
		t.Errorf("after Publish over a link: %v, %v", st, err)
	}
}
