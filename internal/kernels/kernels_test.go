// Tests of kernels.go: every .ptx is what its .cu compiles to, and an
// unknown module is refused.

package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXIsFresh fails when a .cu changed without its PTX being regenerated.
func TestPTXIsFresh(t *testing.T) {
	sources, _ := filepath.Glob("*.cu")
	if len(sources) == 0 {
		t.Fatal("no kernel sources")
	}
	for _, cu := range sources {
		name := strings.TrimSuffix(cu, ".cu")
		file, sum, err := SourceHash(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(cu)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if file != cu || sum != hex.EncodeToString(h[:]) {
			t.Errorf("%s.ptx was made from %s %s, but %s is now %x: run gen.sh on a machine with nvcc", name, file, sum, cu, h)
		}
	}
}

func TestUnknownModule(t *testing.T) {
	if _, err := PTX("nope"); err == nil {
		t.Fatal("want an error for a module that does not exist")
	}
}
