// Tests of the checkpoint beside a claim's root its pod spoiled or
// rewrote: carve's record of each claim (ctl.ClaimRecords) is what
// prepare, placement and status believe, kept across a restart and
// removed by unprepare.

package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestPrepareBesideUnreadableRoot: a claim's root its pod overwrote with
// zeros fails the prepare of no other claim; preparing that claim again
// keeps its TPCs and writes its root anew from carve's record.
func TestPrepareBesideUnreadableRoot(t *testing.T) {
	td := newTestDriver(t)
	a, b := td.claim(t, "a", 16), td.claim(t, "b", 16)
	if r := td.prepare(t, a)["a"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	before := td.reservedSet(t, "a")
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
	if sets := td.reserved(t); sets["a"].String() != before.String() || len(sets["b"]) != 16 || len(sets["a"].Intersect(sets["b"])) != 0 {
		t.Errorf("reserved %v, a before %s", sets, before)
	}
	if l, err := ctl.Read(td.Paths.RuntimeDir); err != nil || len(l.Skipped) != 0 {
		t.Errorf("after preparing it again its root is still unreadable: %+v %v", l.Skipped, err)
	}
}

// TestPrepareBesideRewrittenRoot: an LS claim's pod rewrites its root to
// hold every TPC, with no memory limit, as a BE claim: another claim's
// prepare gets what it would beside an honest root, the claim's status
// and reservation stay as carve recorded them, also for a restarted
// plugin, and unpreparing it removes carve's record with its directory.
func TestPrepareBesideRewrittenRoot(t *testing.T) {
	var got [2]string
	for i, rewrite := range []bool{false, true} {
		td := newTestDriver(t)
		cfg := `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`
		a := td.memClaim(t, "a", 16, "4Gi", cfg)
		if r := td.prepare(t, a)["a"]; r.Err != nil {
			t.Fatal(r.Err)
		}
		cond, st := td.readyCondition(t, a)
		if cond == nil || st == nil {
			t.Fatalf("no status of claim a: %+v", cond)
		}
		if rewrite {
			root := filepath.Join(td.Paths.RuntimeDir, ctl.ClaimsDir, string(a.UID), ctl.ClaimRoot)
			buf, err := os.ReadFile(root)
			if err != nil {
				t.Fatal(err)
			}
			b := (*ctl.Block)(unsafe.Pointer(&buf[0]))
			b.Mask, b.TenantClass, b.MemLimit = [4]uint32{}, ctl.ClassBE, 0
			if err := os.WriteFile(root, buf, 0o666); err != nil {
				t.Fatal(err)
			}
		}
		b := td.memClaim(t, "b", 50, "4Gi")
		r := td.prepare(t, b)["b"]
		got[i] = fmt.Sprint(r.Err, td.reservedSet(t, "b"))
		d := td.restarted(t)
		if r := d.prepareOne(t, a); r.Err != nil {
			t.Fatalf("claim a prepared again by a restarted plugin: %v", r.Err)
		}
		if _, again := td.readyCondition(t, a); fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", st) {
			t.Errorf("claim a's status after its root was rewritten and the plugin restarted: %+v, want %+v", again, st)
		}
		d.unprepareOK(t, a)
		if _, err := os.Stat(filepath.Join(td.Paths.RuntimeDir, ctl.ClaimRecords, string(a.UID))); !os.IsNotExist(err) {
			t.Errorf("carve's record of an unprepared claim: %v", err)
		}
		d.unprepareOK(t, b)
		td.nothingLeft(t)
	}
	if got[1] != got[0] {
		t.Errorf("claim b beside a rewritten root: %s; beside an honest one: %s", got[1], got[0])
	}
}
