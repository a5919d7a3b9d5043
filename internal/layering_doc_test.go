// Tests that every package of the module has a doc comment saying what it
// holds.

package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEveryPackageSaysWhatItHolds: each package of the module has a doc
// comment.
func TestEveryPackageSaysWhatItHolds(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Doc}}", "../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 || strings.HasSuffix(f[0], "/internal") {
			continue // this test's own directory has no package
		}
		if len(f[2]) < 40 {
			t.Errorf("%s: doc comment %q says too little", f[0], f[2])
		}
	}
}
