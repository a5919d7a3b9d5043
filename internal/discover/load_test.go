// Tests of load.go: the probe child's environment, and a cached topology
// without the GPU's memory given it on its first load.

package discover

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/topo/topotest"
)

func TestCleanEnv(t *testing.T) {
	got := cleanEnv([]string{"PATH=/bin", "LD_PRELOAD=/x.so", "CARVE_CTL_DIR=/d", "CARVE_CTL_ROOT=/r", "CUDA_MPS_PIPE_DIRECTORY=/p", "HOME=/h"})
	if !reflect.DeepEqual(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("cleanEnv = %v", got)
	}
}

// TestCacheWithoutMemory: a topology cached before carve recorded the
// GPU's memory gets it on its first load, which writes it back; later
// loads and caches that have it ask nothing.
func TestCacheWithoutMemory(t *testing.T) {
	b, err := os.ReadFile(topotest.Path())
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`\s*"memory_bytes": \d+,`).ReplaceAll(b, nil)
	path := filepath.Join(t.TempDir(), "topo.json")
	os.WriteFile(path, old, 0o644)
	asked := 0
	memory := func(ordinal int) (uint64, error) {
		asked++
		if ordinal != 2 {
			t.Errorf("asked the memory of GPU %d", ordinal)
		}
		return 42 << 30, nil
	}
	for range 2 {
		top, err := readCache(path, 2, memory)
		if err != nil || top == nil || top.MemoryBytes != 42<<30 {
			t.Fatalf("readCache: %+v %v", top, err)
		}
	}
	if asked != 1 {
		t.Errorf("the driver was asked %d times, want once", asked)
	}
	if top, err := readCache(filepath.Join(t.TempDir(), "none.json"), 0, memory); top != nil || err != nil {
		t.Errorf("no cache: %v %v", top, err)
	}
	failing := func(int) (uint64, error) { return 0, errors.New("no driver") }
	os.WriteFile(path, old, 0o644)
	if _, err := readCache(path, 0, failing); err == nil || !strings.Contains(err.Error(), "predates") {
		t.Errorf("a driver that cannot say: %v", err)
	}
}
