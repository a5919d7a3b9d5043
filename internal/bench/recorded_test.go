// Tests that every benchmark result committed under results/ can be shown
// again, its table and its plots (render.go), as carve bench report does.

package bench

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/report"
)

// TestRecordedResults shows every benchmark result committed under
// results/ again: its table and its plots, as carve bench report does.
func TestRecordedResults(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../../results", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b[:min(len(b), 200)], []byte(`"benchmark"`)) {
			return err // a profile, an evaluation, a memory map: not a benchmark result
		}
		r, err := report.Load(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		var table bytes.Buffer
		if err := WriteTable(&table, r); err != nil {
			t.Errorf("%s: table: %v", path, err)
		}
		if !strings.Contains(table.String(), r.Device) || strings.Count(table.String(), "\n") < 3 {
			t.Errorf("%s: table too short:\n%s", path, table.String())
		}
		if err := Plot(r, t.TempDir()); err != nil {
			t.Errorf("%s: plot: %v", path, err)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("only %d benchmark results found under results/", n)
	}
}
