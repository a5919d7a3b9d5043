// Package jsonfile saves and loads the JSON files carve's results,
// profiles and evaluations are kept in: one format (two-space indent, a
// final newline) and errors that name the file and, for a file of another
// kind, the file that was wanted.
package jsonfile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Save writes v as DIR/NAME, making DIR if need be, and returns the path.
func Save(dir, name string, v any) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// A Kind is a kind of file carve writes, to say that a file is not one.
type Kind struct {
	What string // e.g. "a carve benchmark result"
	Want string // the file that is one, and what writes it
}

// Not says that the file at path is not of kind k, and why.
func (k Kind) Not(path, why string) error {
	return fmt.Errorf("%s is not %s (%s): want %s", path, k.What, why, k.Want)
}

// MaxSize is the most Load reads of a file: a larger one is refused, not
// read into memory.
const MaxSize = 256 << 20

// Load reads the file at path, of kind k, into v: a file that is not JSON
// of v's shape is not of kind k. It reads only a regular file (not a FIFO
// or a device, which could be read from without end) of at most MaxSize
// bytes.
func Load(path string, k Kind, v any) error {
	b, err := Read(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return k.Not(path, err.Error())
	}
	return nil
}

// Read returns the contents of the regular file at path, of at most
// MaxSize bytes; anything else is an error naming the file and why.
func Read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO's open waits for a writer without it
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): carve reads its JSON files only from regular files", path, fi.Mode().Type())
	}
	tooBig := fmt.Errorf("%s is larger than %d MiB, more than carve reads of a JSON file", path, MaxSize>>20)
	if fi.Size() > MaxSize {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1)) // it may have grown
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, tooBig
	}
	return b, nil
}
