// The driver tests' setup: no test publishes claims in the node's own
// node directory.

package dra

import (
	"os"
	"testing"
)

// TestMain names a node directory that does not exist (unless the
// environment names one), so that no test publishes claims in the node's
// own; the tests of the node directory make theirs (nodedir_test.go).
func TestMain(m *testing.M) {
	if os.Getenv("CARVE_NODE_DIR") == "" {
		os.Setenv("CARVE_NODE_DIR", "/nonexistent/carve-node-test")
	}
	os.Exit(m.Run())
}
