package main

// The conventions every command keeps.

import (
	"testing"
)

// TestVersionFlag: carve --version (and -v) says what carve version says.
func TestVersionFlag(t *testing.T) {
	want, _, err := carve(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--version", "-v"} {
		if out, _, err := carve(t, flag); err != nil || out != want {
			t.Errorf("carve %s: %q, %v; want %q as carve version says", flag, out, err, want)
		}
	}
}
