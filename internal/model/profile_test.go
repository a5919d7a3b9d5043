// Tests of profile.go: a profile saved and loaded again.

package model

import (
	"os"
	"testing"

	"github.com/carve-gpu/carve/internal/stats"
)

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	p := &Profile{Kernel: "vadd", TPCs: 2, SMs: 4, Sizes: []Size{{TPCs: 1, SMs: 2, Stats: stats.Summarize([]float64{2})}, {TPCs: 2, SMs: 4, Stats: stats.Summarize([]float64{1})}}}
	if _, err := p.Save(dir); err != nil {
		t.Fatal(err)
	}
	all, err := LoadDir(dir)
	if err != nil || all["vadd"] == nil {
		t.Fatalf("LoadDir: %v %v", all, err)
	}
	if got := all["vadd"].Sizes[1].Stats.P50; got != 1 {
		t.Errorf("round trip: the size on all TPCs took %g ms, want 1", got)
	}
	if _, err := LoadDir(t.TempDir()); err == nil {
		t.Error("LoadDir of an empty directory succeeded")
	}
	os.WriteFile(dir+"/junk.json", []byte(`{"x": 1}`), 0o644)
	if _, err := LoadDir(dir); err == nil {
		t.Error("a JSON file that is no profile was accepted")
	}
}
