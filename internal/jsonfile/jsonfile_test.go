// Tests of jsonfile.go: a record saved and loaded again, and a file that is
// not one named in the error with what is wanted.

package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestLoadReadsOnlyBoundedRegularFiles: Load refuses, at once and naming
// the file, a FIFO, a device, a directory and a file over MaxSize, where
// reading them would wait or read without end.
func TestLoadReadsOnlyBoundedRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxSize+1); err != nil { // sparse: takes no disk
		t.Fatal(err)
	}
	k := Kind{What: "a record", Want: "a record"}
	for _, tc := range []struct{ path, want string }{
		{fifo, fifo + " is not a regular file"},
		{"/dev/zero", "/dev/zero is not a regular file"},
		{dir, dir + " is not a regular file"},
		{big, big + " is larger than 256 MiB"},
	} {
		done := make(chan error, 1)
		go func() {
			var v map[string]any
			done <- Load(tc.path, k, &v)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load(%s) = %v, want an error saying %q", tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) still reading after 10 s", tc.path)
		}
	}
}
