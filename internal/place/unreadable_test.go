// Tests of placement beside blocks carve cannot read, a claim's root of
// zeros, and beside a root its pod rewrote to hold every TPC of the GPU.

package place

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestPlaceBesideUnreadableRoot: a claim's root of zeros is skipped: a
// process and another claim are placed beside it.
func TestPlaceBesideUnreadableRoot(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	cd := filepath.Join(dir, ctl.ClaimsDir, "0f0e0d0c-aaaa-bbbb-cccc-000000000001")
	os.MkdirAll(cd, 0o777)
	if err := os.WriteFile(filepath.Join(cd, ctl.ClaimRoot), make([]byte, ctl.Size), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Place(dir, top, Request{Spec: count(t, "2"), PID: sleepers(t, 1)[0].Process.Pid})
	if err != nil {
		t.Fatalf("a process beside a root of zeros: %v", err)
	}
	p.Block.Close()
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "8")}); err != nil {
		t.Fatalf("a claim beside a root of zeros: %v", err)
	}
	if _, err := Holders(dir, top); err != nil {
		t.Errorf("holders beside a root of zeros: %v", err)
	}
}

// TestPlaceBesideRewrittenRoot: a claim's root rewritten by its pod to
// hold every TPC of the GPU, or to be an LS claim with no memory limit,
// changes nothing placement believes of the claim: the holders on the GPU
// and the next claim's TPCs are those of a twin runtime directory where
// no root was rewritten, and nothing is skipped.
func TestPlaceBesideRewrittenRoot(t *testing.T) {
	top, _ := topologyJSON(t)
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		for _, uid := range []string{"uid-a", "uid-b"} {
			r := Request{Claim: &Claim{UID: uid, Name: "ns/" + uid}, Spec: count(t, "16"), Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: 1 << 30}}}
			if _, err := Place(dir, top, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	root := filepath.Join(dirs[1], ctl.ClaimsDir, "uid-b", ctl.ClaimRoot)
	rewriteRoot(t, root, func(b *ctl.Block) {
		b.Mask = [4]uint32{} // disables none: every TPC
		b.TenantClass, b.MemLimit = ctl.ClassLS, 0
	})
	var got [2]string
	for i, dir := range dirs {
		hs, err := Holders(dir, top)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-c", Name: "ns/c"}, Spec: count(t, "8")})
		if err != nil {
			t.Fatalf("a claim beside one whose root was rewritten: %v", err)
		}
		got[i] = fmt.Sprintf("%+v; c: %s", hs, c.Set)
		l, err := ctl.Read(dir)
		if err != nil || len(l.Skipped) != 0 {
			t.Errorf("skipped %+v %v, want none", l.Skipped, err)
		}
	}
	if got[0] != got[1] {
		t.Errorf("beside a rewritten root:\n%s\nwant, as beside none:\n%s", got[1], got[0])
	}
}

// rewriteRoot rewrites the block at path as a pod may, with edit, through
// a copy of its bytes written back in place.
func rewriteRoot(t *testing.T, path string, edit func(*ctl.Block)) {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil || len(buf) != ctl.Size {
		t.Fatalf("reading %s: %d bytes, %v", path, len(buf), err)
	}
	edit((*ctl.Block)(unsafe.Pointer(&buf[0])))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}
