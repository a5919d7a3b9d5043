// Tests of preload.go: environment variables set and removed, earlier
// LD_PRELOADs kept beside the shim's, and the shim found.

package preload

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	got := Set([]string{"A=1", "B=2", "A=3"}, "A=9", "C=4")
	if strings.Join(got, " ") != "B=2 A=9 C=4" {
		t.Errorf("Set = %v", got)
	}
	if got := Without([]string{"A=1", "B=2", "C=3"}, "A", "C"); !slices.Equal(got, []string{"B=2"}) {
		t.Errorf("Without = %v", got)
	}
}

func TestEnvKeepsEarlierPreloads(t *testing.T) {
	env := Env([]string{"PATH=/bin", "LD_PRELOAD=/other.so"}, "/lib/libcarve.so", "/dev/shm/carve-0", "/dev/shm/carve-0/42")
	want := []string{"PATH=/bin", "LD_PRELOAD=/lib/libcarve.so:/other.so", "CARVE_CTL_DIR=/dev/shm/carve-0", "CARVE_CTL_ROOT=/dev/shm/carve-0/42"}
	if !slices.Equal(env, want) {
		t.Errorf("Env = %v, want %v", env, want)
	}
}

func TestFind(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libcarve.so")
	os.WriteFile(lib, nil, 0o644)
	if p, err := Find(lib); err != nil || p != lib {
		t.Errorf("Find(flag) = %q, %v", p, err)
	}
	t.Setenv(VarShim, lib)
	if p, err := Find(""); err != nil || p != lib {
		t.Errorf("Find($CARVE_SHIM) = %q, %v", p, err)
	}
	if _, err := Find("/nonexistent/libcarve.so"); err == nil || !strings.Contains(err.Error(), "shim /nonexistent") {
		t.Errorf("missing shim: %v", err)
	}
}
