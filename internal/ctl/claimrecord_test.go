// Tests of carve's records of claims (ClaimRecords): what Claims believes
// of a claim whose pod rewrote, spoiled or removed its root, the
// directories of interrupted reservations, and the claims of an older
// carve's runtime directory, recorded once.

package ctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
)

// reserveClaim reserves claim uid in dir as placement does: its directory
// and root, then carve's record.
func reserveClaim(t *testing.T, dir, uid string, in ctl.Init) string {
	t.Helper()
	cd, err := ctl.ClaimDir(dir, uid)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(cd, 0o755)
	h, err := ctl.CreateClaimRoot(cd, in)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := ctl.RecordClaim(dir, uid, in); err != nil {
		t.Fatal(err)
	}
	return cd
}

// TestClaimRecordBelieved: a claim's root rewritten (another mask, class
// and memory limit, and memory in its account), spoiled (zeros, a symbolic
// link) or removed changes nothing Claims says of its reservation, which
// is its record's; the account is the root's, and a spoiled root is
// reported. A directory with no record is an interrupted reservation, and
// a record whose directory is gone is still reserved. The root is mode
// 0666 (every uid of the pod counts memory in it), the record 0600 in a
// directory of 0700.
func TestClaimRecordBelieved(t *testing.T) {
	in := ctl.Init{Class: ctl.ClassLS, MemLimit: 4 << 30, Comm: []string{"claim", "ns/a"}, Parts: []ctl.Part{{Mask: enableOnly(2, 3), Live: live}}}
	for _, tc := range []struct {
		name   string
		spoil  func(root string)
		reason string // of the root's report; "": none
		used   uint64 // the account Claims reads
	}{
		{"rewritten", func(root string) {
			h, err := ctl.CreateClaimRoot(filepath.Dir(root), ctl.Init{Class: ctl.ClassBE, Parts: []ctl.Part{{Mask: enableOnly(0, 1, 2, 3, 4, 5, 6, 7), Live: live}}})
			if err != nil {
				t.Fatal(err)
			}
			ctl.BlockOf(h).MemTotal = 3 << 30
			h.Close()
		}, "", 3 << 30},
		{"zeros", func(root string) { os.WriteFile(root, make([]byte, ctl.Size), 0o666) }, "magic", 0},
		{"symlink", func(root string) { os.Remove(root); os.Symlink("/etc/passwd", root) }, "symlink", 0},
		{"removed", func(root string) { os.Remove(root) }, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cd := reserveClaim(t, dir, "uid-a", in)
			root := filepath.Join(cd, ctl.ClaimRoot)
			want, _, err := ctl.Claims(dir)
			if err != nil || len(want) != 1 {
				t.Fatalf("claims %+v %v", want, err)
			}
			if st, err := os.Stat(root); err != nil || st.Mode().Perm() != 0o666 {
				t.Errorf("the claim's root: %v %v, want mode 0666", st.Mode(), err)
			}
			rec := filepath.Join(dir, ctl.ClaimRecords, "uid-a")
			if st, err := os.Stat(rec); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("carve's record: %v %v, want mode 0600", st.Mode(), err)
			}
			if st, err := os.Stat(filepath.Dir(rec)); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("carve's records: %v %v, want mode 0700", st.Mode(), err)
			}
			tc.spoil(root)
			l, err := ctl.Read(dir)
			if err != nil || len(l.Claims) != 1 || len(l.Pending) != 0 {
				t.Fatalf("claims %+v, pending %v: %v", l.Claims, l.Pending, err)
			}
			c := l.Claims[0]
			if c.Root.Mask != want[0].Root.Mask || c.Root.Class != ctl.ClassLS || c.Root.Memory.Limit != 4<<30 || c.Name() != "ns/a" {
				t.Errorf("believed %+v, want the record's %+v", c.Root, want[0].Root)
			}
			if c.Account.Total != tc.used {
				t.Errorf("account %+v, want %d used", c.Account, tc.used)
			}
			switch {
			case tc.reason == "" && len(l.Skipped) != 0:
				t.Errorf("skipped %+v", l.Skipped)
			case tc.reason != "" && (len(l.Skipped) != 1 || l.Skipped[0].Path != root || l.Skipped[0].Reason != tc.reason):
				t.Errorf("skipped %+v, want the root, for %s", l.Skipped, tc.reason)
			}
			if fixed, err := ctl.RepairClaimRoot(dir, c); err != nil || fixed != (tc.name != "rewritten") {
				t.Errorf("repairing the root: %v %v", fixed, err)
			}
			if l, err := ctl.Read(dir); err != nil || len(l.Skipped) != 0 || len(l.Claims) != 1 {
				t.Errorf("after repairing the root: %+v %v", l, err)
			}
		})
	}
	t.Run("no record", func(t *testing.T) {
		dir := t.TempDir()
		reserveClaim(t, dir, "uid-a", in)
		cd := reserveClaim(t, dir, "uid-b", in)
		if had, err := ctl.ForgetClaim(dir, "uid-b"); !had || err != nil {
			t.Fatalf("forget: %v %v", had, err)
		}
		claims, pending, err := ctl.Claims(dir)
		if err != nil || len(claims) != 1 || claims[0].UID != "uid-a" || len(pending) != 1 || pending[0] != cd {
			t.Errorf("claims %+v, pending %v (%v); want uid-a, and uid-b's directory pending", claims, pending, err)
		}
		os.RemoveAll(cd)
		os.RemoveAll(filepath.Join(dir, ctl.ClaimsDir, "uid-a"))
		if claims, _, err := ctl.Claims(dir); err != nil || len(claims) != 1 || claims[0].UID != "uid-a" || claims[0].Root.Mask != enableOnly(2, 3) {
			t.Errorf("a record whose directory is gone: %+v %v", claims, err)
		}
	})
}

// TestRecordLegacy: a runtime directory of an older carve, with claims'
// roots and no records, is read as before (the roots are the
// reservations) until RecordLegacy records each readable root once;
// after that a rewritten root is not believed, and RecordLegacy does
// nothing more. A claim whose root it could not read is an interrupted
// reservation, to be removed, only where no process runs in it: one
// whose process holds its block's lock is kept and reported.
func TestRecordLegacy(t *testing.T) {
	dir := t.TempDir()
	for uid, tpcs := range map[string][]int{"uid-a": {0, 1}, "uid-b": {2, 3}} {
		cd, _ := ctl.ClaimDir(dir, uid)
		os.MkdirAll(cd, 0o755)
		h, err := ctl.CreateClaimRoot(cd, ctl.Init{Comm: []string{"claim", "ns/" + uid}, Parts: []ctl.Part{{Mask: enableOnly(tpcs...), Live: live}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	zeros := filepath.Join(dir, ctl.ClaimsDir, "uid-z", ctl.ClaimRoot)
	running := filepath.Join(dir, ctl.ClaimsDir, "uid-y")
	for _, root := range []string{zeros, filepath.Join(running, ctl.ClaimRoot)} {
		if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root, make([]byte, ctl.Size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the block of uid-y's process, pid 1 in its container, which runs
	block := filepath.Join(running, "1")
	if err := os.WriteFile(block, make([]byte, ctl.Size), 0o644); err != nil {
		t.Fatal(err)
	}
	ctltest.HoldLock(t, block)
	before, _, err := ctl.Claims(dir)
	if err != nil || len(before) != 2 {
		t.Fatalf("an older carve's claims: %+v %v", before, err)
	}
	if n, err := ctl.RecordLegacy(dir); n != 2 || err != nil {
		t.Fatalf("recorded %d: %v, want 2", n, err)
	}
	h, _ := ctl.CreateClaimRoot(before[0].Dir, ctl.Init{Parts: []ctl.Part{{Mask: enableOnly(0, 1, 2, 3), Live: live}}})
	h.Close()
	after, pending, err := ctl.Claims(dir)
	if err != nil || len(after) != 2 || after[0].Root.Mask != before[0].Root.Mask || after[1].Root.Mask != before[1].Root.Mask {
		t.Errorf("recorded claims %+v %v, want %+v", after, err, before)
	}
	if len(pending) != 1 || pending[0] != filepath.Dir(zeros) {
		t.Errorf("pending %v, want the claim of the root of zeros that no process runs in", pending)
	}
	l, err := ctl.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, b := range l.Skipped {
		kept = kept || b.Path == running && b.Reason == "unrecorded" && strings.Contains(b.Why, "process 1 runs")
	}
	if !kept {
		t.Errorf("the unrecorded claim that a process runs in is not reported: %+v", l.Skipped)
	}
	if n, err := ctl.RecordLegacy(dir); n != 0 || err != nil {
		t.Errorf("recording again: %d %v", n, err)
	}
}
