// Tests of the checkpoint beside a claim's root carve cannot read.

package dra

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestPrepareBesideUnreadableRoot: a claim's root its pod overwrote with
// zeros fails the prepare of no other claim; preparing that claim again
// writes its root anew.
func TestPrepareBesideUnreadableRoot(t *testing.T) {
	td := newTestDriver(t)
	a, b := td.claim(t, "a", 16), td.claim(t, "b", 16)
	if r := td.prepare(t, a)["a"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	root := filepath.Join(td.Paths.RuntimeDir, ctl.ClaimsDir, string(a.UID), ctl.ClaimRoot)
	if err := os.WriteFile(root, make([]byte, ctl.Size), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := td.prepare(t, b)["b"]; r.Err != nil {
		t.Fatalf("prepare beside a root of zeros: %v", r.Err)
	}
	if r := td.prepare(t, a)["a"]; r.Err != nil {
		t.Fatalf("preparing the claim of the root of zeros again: %v", r.Err)
	}
	if sets := td.reserved(t); len(sets["a"]) != 16 || len(sets["b"]) != 16 || len(sets["a"].Intersect(sets["b"])) != 0 {
		t.Errorf("reserved %v", sets)
	}
}
