// Blocks of another release of carve: a control block (Open, List) or a
// node block (OpenNode) of another layout is refused, and saying so.

package ctl_test

import (
	"os"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestBlockOfAnotherRelease: a control block of another layout, left in the
// runtime directory by another release of carve, is refused with what it
// holds, never read after it is unmapped (that crashed carve ls and every
// placement beside such a block), and a listing of the directory goes on.
func TestBlockOfAnotherRelease(t *testing.T) {
	dir := t.TempDir()
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	path := h.Path
	h.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[4] = ctl.Version + 1 // version: a uint16 at 4
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ctl.Open(dir, os.Getpid())
	if err == nil || !strings.Contains(err.Error(), "different releases") {
		t.Fatalf("Open of a version %d block: %v", ctl.Version+1, err)
	}
	if want := "version " + string(rune('0'+ctl.Version+1)); !strings.Contains(err.Error(), want) {
		t.Errorf("the error %q does not say the block's version (%s)", err, want)
	}
	if _, err := ctl.List(dir); err != nil {
		t.Errorf("listing a directory with a block of another release: %v", err)
	}
}

// TestNodeOfAnotherRelease: a node block of another layout is refused with
// what to do, never mapped as this one.
func TestNodeOfAnotherRelease(t *testing.T) {
	dir := t.TempDir()
	n, err := ctl.OpenNode(dir, "node-test", live)
	if err != nil {
		t.Fatal(err)
	}
	path := n.Path
	n.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[4] = ctl.NodeVersion - 1 // version: a uint16 at 4
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.OpenNode(dir, "node-test", live); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("OpenNode of a version %d block: %v", ctl.NodeVersion-1, err)
	}
}
