// Tests of jsonfile.go: a record saved and loaded again, and a file that is
// not one named in the error with what is wanted.

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
	k := Kind{What: "a record", Want: "the r.json that TestSaveLoad writes"}
	if err := Load(path, k, &got); err != nil || got.A != 7 {
		t.Errorf("Load: %+v, %v", got, err)
	}
	for _, text := range []string{"{", "root:x:0:0:root:/root:/bin/bash", `{"A": "seven"}`} {
		os.WriteFile(path, []byte(text), 0o644)
		want := path + " is not a record ("
		if err := Load(path, k, &got); err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "): want "+k.Want) {
			t.Errorf("Load of %q: %v, want an error naming the file, saying it is not a record and what is", text, err)
		}
	}
	if err := Load(filepath.Join(dir, "none.json"), k, &got); !os.IsNotExist(err) {
		t.Errorf("Load of no file: %v", err)
	}
}
