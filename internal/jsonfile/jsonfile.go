// Package jsonfile saves and loads the JSON files carve's results,
// profiles and evaluations are kept in: one format (two-space indent, a
// final newline) and errors that name the file and, for a file of another
// kind, the file that was wanted.
package jsonfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// Load reads the file at path, of kind k, into v: a file that is not JSON
// of v's shape is not of kind k.
func Load(path string, k Kind, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return k.Not(path, err.Error())
	}
	return nil
}
