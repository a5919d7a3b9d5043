// Tests of root's tenant records in the node directory: a tenant of carve
// run is seated as LS only as root's record of it says, whatever its
// blocks say later (its first or a child's); records are root's, no user
// makes, changes or removes one, one a user planted (or a link) is not
// honoured, and a tenant's record goes when it ends.

package place

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// blockOf is the path of pid's block in dir.
func blockOf(dir string, pid int) string { return filepath.Join(dir, strconv.Itoa(pid)) }

// seatedIn says whether the tenant pid has a seat in dir's node block of
// GPU uuid.
func seatedIn(t *testing.T, dir, uuid string, pid int) bool {
	t.Helper()
	n, err := ctl.PeekNode(dir, ctl.NodeName(uuid))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	return n.Seated(pid)
}

// TestNodeDirClassFromRecord: in the node directory, uid 65534's BE
// tenant, recorded BE at root's fence, is seated at none of root's next
// fences after a child block of it (the user's) says LS, nor after its
// own block says LS with an SLO of 10 us; its record still says BE. The
// user's honest LS tenant is seated throughout.
func TestNodeDirClassFromRecord(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js}
	ls := asUser(t, bin, 65534, append(env, "PLACE_HELPER=place", "PLACE_COUNT=8", "PLACE_CLASS=ls")...)
	be := asUser(t, bin, 65534, append(env, "PLACE_HELPER=place", "PLACE_COUNT=4", "PLACE_CLASS=be")...)
	for _, h := range []*helper{ls, be} {
		if !strings.HasPrefix(h.line, "placed") {
			t.Fatalf("the user's placement: %q", h.line)
		}
		defer func() { h.in.Close(); h.cmd.Wait() }()
	}
	lsPID, bePID := ls.cmd.Process.Pid, be.cmd.Process.Pid
	if err := Fence(dir); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	if !seatedIn(t, dir, top.UUID, lsPID) || seatedIn(t, dir, top.UUID, bePID) {
		t.Fatal("root's first fence: want the LS tenant seated, the BE one not")
	}

	// a child of the BE tenant, its block the user's, says LS
	child, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Tenant: bePID, Class: ctl.ClassLS,
		Parts: []ctl.Part{{GPU: top.UUID, Node: ctl.NodeName(top.UUID), Live: top.Live(), SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Remove()
	if err := os.Chown(child.Path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	if seatedIn(t, dir, top.UUID, bePID) {
		t.Error("a child block that says LS seated its BE tenant")
	}

	// the BE tenant's own block says LS, with an SLO of 10 us
	rewriteRoot(t, blockOf(dir, bePID), func(b *ctl.Block) { b.TenantClass, b.SLOUS = ctl.ClassLS, 10 })
	owned(t, blockOf(dir, bePID), 65534, 0o644)
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	if seatedIn(t, dir, top.UUID, bePID) {
		t.Error("a BE tenant that rewrote its block to LS was seated")
	}
	if !seatedIn(t, dir, top.UUID, lsPID) {
		t.Error("the honest LS tenant lost its seat")
	}
	b, err := os.ReadFile(filepath.Join(dir, ctl.TenantRecords, strconv.Itoa(bePID)))
	if err != nil || !strings.Contains(string(b), "class be\n") || !strings.Contains(string(b), "slo \n") {
		t.Errorf("the BE tenant's record: %q, %v; want class be, no SLO", b, err)
	}
}

// TestTenantRecordsRoots: root's records are root's (0644) in a directory
// of root's (0755), one a tenant; a user can neither make one nor write,
// remove or rename one, nor replace the directory; a record a user
// planted, or a link to a record of root's, is not honoured (skipped and
// reported by ctl.Read); a records directory a user made is not trusted
// and root's fence replaces it; and a tenant's record goes when it ends.
func TestTenantRecordsRoots(t *testing.T) {
	dir, bin := nodeDir(t)
	_, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js}
	be := asUser(t, bin, 65534, append(env, "PLACE_HELPER=place", "PLACE_COUNT=4", "PLACE_CLASS=be")...)
	if !strings.HasPrefix(be.line, "placed") {
		t.Fatalf("the user's placement: %q", be.line)
	}
	ended := false
	defer func() {
		if !ended {
			be.in.Close()
			be.cmd.Wait()
		}
	}()
	pid := be.cmd.Process.Pid
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	rd := filepath.Join(dir, ctl.TenantRecords)
	rec := filepath.Join(rd, strconv.Itoa(pid))
	owned(t, rd, 0, os.ModeDir|0o755)
	owned(t, rec, 0, 0o644)
	entry := ctl.Entry{Path: blockOf(dir, pid)}
	if h, err := ctl.OpenPath(entry.Path); err == nil {
		entry.Snapshot = h.Snapshot()
		h.Close()
	} else {
		t.Fatal(err)
	}
	if recs, bad := ctl.ReadRecords(dir); !recs.Recorded(entry) || len(bad) != 0 {
		t.Fatalf("root's record of pid %d not read (skipped %v)", pid, bad)
	}

	h := asUser(t, bin, 65534, "PLACE_HELPER=write", "PLACE_DIR="+dir, "PLACE_SUB="+ctl.TenantRecords, "PLACE_UID="+strconv.Itoa(pid))
	if want := "make:refused write:refused remove:refused rename:refused chmod:refused"; h.line != want {
		t.Errorf("a user: %q, want %q", h.line, want)
	}

	// planted: a record of the user's (as if it had made it), then a link
	// to one of root's elsewhere
	text := ctl.TenantRecord{PID: pid, StartTicks: entry.StartTicks, UID: 65534, Class: ctl.ClassLS, SLO: ctl.SLO{Max: 10 * time.Microsecond}}.String()
	elsewhere := filepath.Join(t.TempDir(), "record")
	for _, plant := range []struct {
		reason string
		make   func() error
	}{
		{"owner", func() error {
			if err := os.WriteFile(rec, []byte(text), 0o644); err != nil {
				return err
			}
			return os.Chown(rec, 65534, 65534)
		}},
		{"symlink", func() error {
			if err := os.WriteFile(elsewhere, []byte(text), 0o644); err != nil {
				return err
			}
			return os.Symlink(elsewhere, rec)
		}},
	} {
		os.Remove(rec)
		if err := plant.make(); err != nil {
			t.Fatal(err)
		}
		recs, bad := ctl.ReadRecords(dir)
		if recs.Recorded(entry) || recs.Of(entry).Class == ctl.ClassLS || len(bad) != 1 || bad[0].Reason != plant.reason {
			t.Errorf("a planted record (%s): recorded %v, class %d, skipped %v; want not honoured, skipped as %s",
				plant.reason, recs.Recorded(entry), recs.Of(entry).Class, bad, plant.reason)
		}
		if l, err := ctl.Read(dir); err != nil || !skipped(l.Skipped, rec, plant.reason) {
			t.Errorf("ctl.Read beside a planted record (%s): skipped %v, %v; want %s named", plant.reason, l.Skipped, err, rec)
		}
	}

	// the directory a user made
	if err := os.RemoveAll(rd); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, []byte(ctl.TenantRecord{PID: pid, StartTicks: entry.StartTicks, UID: 65534, Class: ctl.ClassLS}.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(rd, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if recs, bad := ctl.ReadRecords(dir); recs.Recorded(entry) || len(bad) != 1 || bad[0].Reason != "records" {
		t.Errorf("a records directory of the user's: recorded %v, skipped %v; want not honoured, skipped as records", recs.Recorded(entry), bad)
	}
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	owned(t, rd, 0, os.ModeDir|0o755)
	owned(t, rec, 0, 0o644)
	if b, _ := os.ReadFile(rec); !strings.Contains(string(b), "class be\n") {
		t.Errorf("root's record after its fence replaced the user's directory: %q, want class be", b)
	}

	be.in.Close()
	be.cmd.Wait()
	ended = true
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(rec); !os.IsNotExist(err) {
		t.Errorf("the record of a tenant that ended is still there (%v)", err)
	}
}

// skipped says whether bad names path for reason.
func skipped(bad []ctl.Bad, path, reason string) bool {
	for _, b := range bad {
		if b.Path == path && b.Reason == reason {
			return true
		}
	}
	return false
}
