// Blocks carve cannot read (Bad): a listing skips each and says why, and
// goes on with the others.

package ctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestUnreadableBlocksSkipped: blocks of zeros, of the wrong size, a
// symbolic link, a FIFO, a directory, a mask with no live TPC, and a
// claim's root of zeros (a claim's directory is its pod's to write) are
// skipped and reported; the process's and the other claim's blocks are
// listed, and nothing waits on the FIFO.
func TestUnreadableBlocksSkipped(t *testing.T) {
	dir := t.TempDir()
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "1"), make([]byte, ctl.Size))
	os.Symlink(h.Path, filepath.Join(dir, "2"))
	if err := syscall.Mkfifo(filepath.Join(dir, "3"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "4"), make([]byte, 100))
	os.Mkdir(filepath.Join(dir, "5"), 0o700)
	bad, err := ctl.Create(dir, ctl.Init{PID: 6, Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0)}, Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	bad.Close()
	good, err := ctl.ClaimDir(dir, "good")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(good, 0o755)
	root, err := ctl.CreateClaimRoot(good, ctl.Init{Parts: []ctl.Part{{Mask: enableOnly(2, 3), Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	root.Close()
	zeros := filepath.Join(dir, ctl.ClaimsDir, "0f0e0d0c-aaaa-bbbb-cccc-000000000001", ctl.ClaimRoot)
	write(zeros, make([]byte, ctl.Size))

	done := make(chan struct{})
	var l ctl.Listing
	go func() {
		defer close(done)
		l, err = ctl.Read(dir)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Read waits (on the FIFO?)")
	}
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(l.Live) != 1 || l.Live[0].PID != os.Getpid() {
		t.Errorf("live blocks %+v, want only this process's", l.Live)
	}
	if len(l.Claims) != 1 || l.Claims[0].UID != "good" {
		t.Errorf("claims %+v, want only the good one", l.Claims)
	}
	want := map[string]string{
		filepath.Join(dir, "1"): "magic", filepath.Join(dir, "2"): "symlink", filepath.Join(dir, "3"): "not-regular",
		filepath.Join(dir, "4"): "size", filepath.Join(dir, "5"): "not-regular", filepath.Join(dir, "6"): "mask", zeros: "magic",
	}
	for _, b := range l.Skipped {
		if want[b.Path] != b.Reason || !strings.Contains(b.Why, b.Path) {
			t.Errorf("skipped %s (%s): %s; want reason %q and the path said", b.Path, b.Reason, b.Why, want[b.Path])
		}
		delete(want, b.Path)
	}
	for path, reason := range want {
		t.Errorf("%s (%s) is not among the skipped: %+v", path, reason, l.Skipped)
	}
	// Claims and Scan, as placement and carve-dra call them, go on too
	claims, _, err := ctl.Claims(dir)
	if err != nil || len(claims) != 1 {
		t.Errorf("Claims beside a root of zeros: %d claims, %v", len(claims), err)
	}
	if live, _, err := ctl.Scan(dir); err != nil || len(live) != 1 {
		t.Errorf("Scan beside unreadable blocks: %d live, %v", len(live), err)
	}
}

// TestBlockCutShort: a block whose file is cut short after it is mapped
// (its pod truncated it) is an error to the listing that reads it, not a
// crash.
func TestBlockCutShort(t *testing.T) {
	dir := t.TempDir()
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := os.Truncate(h.Path, 0); err != nil {
		t.Fatal(err)
	}
	err = ctl.SnapshotGuarded(h)
	if b, ok := err.(*ctl.Bad); !ok || b.Reason != "fault" {
		t.Errorf("reading a block cut short: %v, want a Bad of reason fault", err)
	}
}
