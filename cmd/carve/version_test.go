// Tests of carve version.

package main

import (
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	out, _, err := carve(t, "version")
	if err != nil || !strings.HasPrefix(out, "carve ") {
		t.Errorf("version: %q %v", out, err)
	}
}
