// Tests of preload.go: environment variables set and removed, earlier
// LD_PRELOADs kept beside the shim's, and the shim found.

package preload

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
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
	lib := shimtest.Build(t).Shim
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

// TestVerifyRefusesWhatIsNotTheShim: Find and Verify take carve's own
// library and refuse, naming the file and why, an empty file, text,
// another shared library, an executable, a directory and a library of
// another control-block version.
func TestVerifyRefusesWhatIsNotTheShim(t *testing.T) {
	built := shimtest.Build(t)
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cc := func(name, src string) string {
		c := file(name+".c", []byte(src))
		so := filepath.Join(dir, name+".so")
		if out, err := exec.Command("cc", "-shared", "-fPIC", "-o", so, c).CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", c, err, out)
		}
		return so
	}
	if err := Verify(built.Shim); err != nil {
		t.Errorf("Verify(the shim) = %v", err)
	}
	if err := Verify(built.TestShim); err != nil {
		t.Errorf("Verify(the shim's test build) = %v", err)
	}
	for _, tc := range []struct {
		path, why string
	}{
		{file("empty.so", nil), "not an ELF file"},
		{file("passwd", []byte("root:x:0:0:root:/root:/bin/bash\n")), "not an ELF file"},
		{cc("other", "int other(void) { return 1; }\n"), "does not define carve_abi_version"},
		{cc("old", "const unsigned carve_abi_version = 1;\n"), fmt.Sprintf("control-block version (carve_abi_version) is 1, this carve's is %d", ctl.Version)},
		{cc("short", "const unsigned char carve_abi_version = 5;\n"), "is 1 bytes, not 4"},
		{cc("undefined", "extern const unsigned carve_abi_version;\nunsigned f(void) { return carve_abi_version; }\n"), "does not define"},
		{built.Driver, "not a shared library"},
		{dir, "not a regular file"},
	} {
		for _, find := range []func(string) (string, error){func(p string) (string, error) { return "", Verify(p) }, Find} {
			_, err := find(tc.path)
			if !errors.Is(err, ErrNotShim) || !strings.Contains(err.Error(), "shim "+tc.path+": not carve's library: ") ||
				!strings.Contains(err.Error(), tc.why) {
				t.Errorf("%s: %v, want ErrNotShim saying %q", tc.path, err, tc.why)
			}
		}
	}
	t.Setenv(VarShim, file("env.so", nil))
	if _, err := Find(""); !errors.Is(err, ErrNotShim) {
		t.Errorf("Find($CARVE_SHIM empty) = %v, want ErrNotShim", err)
	}
}
