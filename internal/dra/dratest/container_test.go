// Tests of container.go: Direct points the environment's container paths at
// the mounts' sources, the longest mount first.

package dratest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDirect: the environment's container paths name the mounts' sources,
// the longest mount first, and other values are left alone.
func TestDirect(t *testing.T) {
	dir := t.TempDir()
	spec := `{"cdiVersion": "0.6.0", "kind": "example.com/test", "devices": [{"name": "d", "containerEdits": {
		"env": ["A=/ctr/x/y", "B=/other", "C=/ctr/x/z/w", "D=/ctr/xy"],
		"mounts": [{"hostPath": "/host/x", "containerPath": "/ctr/x"}, {"hostPath": "/host/xz", "containerPath": "/ctr/x/z"}]}}]}`
	if err := os.WriteFile(filepath.Join(dir, "test.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, err := Direct(dir, []string{"example.com/test=d"}, []string{"PATH=/bin"}, "true")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PATH=/bin", "A=/host/x/y", "B=/other", "C=/host/xz/w", "D=/ctr/xy"} {
		if !slices.Contains(cmd.Env, want) {
			t.Errorf("environment %q lacks %s", cmd.Env, want)
		}
	}
	if _, err := Direct(dir, []string{"example.com/test=none"}, nil, "true"); err == nil {
		t.Error("an unknown device was no error")
	}
}
