// Tests of carve node init: the node directory it makes is the one carve
// ls uses, one root did not make is refused, and its errors.

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestNodeInit: as root, carve node init makes a directory of mode 1777
// (1770 of a group with --group) that carve ls then uses, listing a
// tenant placed there and a claim carve-dra published there (no pid);
// without the sticky bit, carve ls refuses it and says how to fix it. As
// another user, it says it needs root.
func TestNodeInit(t *testing.T) {
	top := sandbox(t)
	nd := filepath.Join(t.TempDir(), "node")
	if os.Geteuid() != 0 {
		if _, _, err := carve(t, "node", "init", "--dir", nd); err == nil || !strings.Contains(err.Error(), "needs root") {
			t.Fatalf("carve node init as uid %d: %v, want it to need root", os.Geteuid(), err)
		}
		return
	}
	if _, _, err := carve(t, "node", "init", "--dir", nd, "--group", "no-such-group-of-carve"); err == nil ||
		!strings.Contains(err.Error(), "--group no-such-group-of-carve") {
		t.Fatalf("an unknown group: %v", err)
	}
	out, _, err := carve(t, "node", "init", "--dir", nd)
	if err != nil || !strings.Contains(out, nd) {
		t.Fatalf("carve node init: %q, %v", out, err)
	}
	if st, err := os.Stat(nd); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Fatalf("node directory: %v, %v", st, err)
	}
	if _, _, err := carve(t, "node", "init", "--dir", nd, "--group", "root"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(nd); st.Mode().Perm() != 0o770 {
		t.Fatalf("with --group: mode %v, want 1770", st.Mode())
	}
	t.Setenv("CARVE_RUNTIME_DIR", "")
	t.Setenv("CARVE_NODE_DIR", nd)
	h, err := ctl.Create(nd, ctl.Init{PID: os.Getpid(), Comm: []string{"tenant-in-the-node-directory"}, Parts: []ctl.Part{{Mask: top.Live().Disable(), Live: top.Live()}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if out, _, err := carve(t, "ls"); err != nil || !strings.Contains(out, "tenant-in-the-node-directory") {
		t.Fatalf("carve ls in the node directory: %q, %v; want the tenant placed there", out, err)
	}
	rd := t.TempDir() // carve-dra's, which publishes its claim in the node directory
	half := top.Live().Disable()
	half[0] |= 0xff
	claim := ctl.Init{Comm: []string{"claim", "ns/published"}, Parts: []ctl.Part{{GPU: top.UUID, Mask: half, Live: top.Live()}}}
	if err := ctl.RecordClaim(rd, "uid-published", claim); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Publish(rd, nd); err != nil {
		t.Fatal(err)
	}
	if out, _, err := carve(t, "ls"); err != nil || !regexp.MustCompile(`(?m)^-\s.*\breserved\b.*claim ns/published$`).MatchString(out) {
		t.Fatalf("carve ls in the node directory: %q, %v; want the claim carve-dra published there, with no pid", out, err)
	}
	os.Chmod(nd, 0o777)
	if _, _, err := carve(t, "ls"); err == nil || !strings.Contains(err.Error(), "without the sticky bit") {
		t.Fatalf("carve ls in a node directory without the sticky bit: %v", err)
	}
}
