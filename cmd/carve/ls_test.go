// Tests of carve run and carve ls beside a block carve cannot read.

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestUnreadableClaimRoot: a claim's root of zeros (its pod's to write)
// stops neither carve run nor carve ls, which says it skipped it, in its
// table and in JSON.
func TestUnreadableClaimRoot(t *testing.T) {
	carveBin, _ := builtCarve(t)
	root := filepath.Join(os.Getenv("CARVE_RUNTIME_DIR"), ctl.ClaimsDir, "0f0e0d0c-aaaa-bbbb-cccc-000000000001", ctl.ClaimRoot)
	os.MkdirAll(filepath.Dir(root), 0o700)
	if err := os.WriteFile(root, make([]byte, ctl.Size), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(carveBin, "run", "-q", "-n", "2", "--", "true").CombinedOutput(); err != nil {
		t.Errorf("carve run beside a root of zeros: %v\n%s", err, out)
	}
	out, _, err := carve(t, "ls")
	if err != nil || !strings.Contains(out, "skipped "+root+" (magic)") {
		t.Errorf("carve ls: %v\n%s", err, out)
	}
	out, _, err = carve(t, "ls", "-o", "json")
	if err != nil || !strings.Contains(out, `"unreadable"`) || !strings.Contains(out, `"reason": "magic"`) {
		t.Errorf("carve ls -o json: %v\n%s", err, out)
	}
}
