package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	type rec struct{ A int }
	path, err := Save(dir, "r.json", rec{A: 7})
	if err != nil || path != filepath.Join(dir, "r.json") {
		t.Fatalf("Save: %q, %v", path, err)
	}
	var got rec
	if err := Load(path, &got); err != nil || got.A != 7 {
		t.Errorf("Load: %+v, %v", got, err)
	}
	os.WriteFile(path, []byte("{"), 0o644)
	if err := Load(path, &got); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of a broken file: %v, want an error naming it", err)
	}
	if err := Load(filepath.Join(dir, "none.json"), &got); !os.IsNotExist(err) {
		t.Errorf("Load of no file: %v", err)
	}
}
