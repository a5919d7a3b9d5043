// Tests of placement beside blocks carve cannot read: a claim's root of
// zeros, and one its pod rewrote to hold every TPC of the GPU.

package place

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
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

// TestPlaceBesideRewrittenRoot: a claim whose root says it holds every
// TPC of the GPU, beside another claim there, was rewritten by its pod:
// placement counts it as holding none, and the listing says it skipped it.
func TestPlaceBesideRewrittenRoot(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	for _, uid := range []string{"uid-a", "uid-b"} {
		if _, err := Place(dir, top, Request{Claim: &Claim{UID: uid, Name: "ns/" + uid}, Spec: count(t, "16")}); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(dir, ctl.ClaimsDir, "uid-b", ctl.ClaimRoot)
	b, err := os.ReadFile(root)
	if err != nil {
		t.Fatal(err)
	}
	off := unsafe.Offsetof(ctl.Block{}.Mask)
	for i := range 4 {
		binary.NativeEndian.PutUint32(b[off+uintptr(4*i):], 0) // disables none: every TPC
	}
	if err := os.WriteFile(root, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-c", Name: "ns/c"}, Spec: count(t, "8")})
	if err != nil {
		t.Fatalf("a claim beside one rewritten to hold every TPC: %v", err)
	}
	l, err := ctl.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Skipped) != 1 || l.Skipped[0].Path != root || l.Skipped[0].Reason != "overlap" {
		t.Errorf("skipped %+v, want the rewritten root, for overlap", l.Skipped)
	}
	for _, cl := range l.Claims {
		if cl.UID == "uid-a" && len(c.Set.Intersect(partition.FromMask(top, cl.Root.Mask))) > 0 {
			t.Errorf("claim c got TPCs of claim a: %s", c.Set)
		}
	}
}
