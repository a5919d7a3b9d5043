// Package gputest gates tests that need a GPU: they run only with
// CARVE_GPU_TESTS=1 (go test -c here, run the binary on the GPU machine).
package gputest

import (
	"os"
	"testing"
)

// Need skips the test unless CARVE_GPU_TESTS=1.
func Need(t testing.TB) {
	t.Helper()
	if os.Getenv("CARVE_GPU_TESTS") != "1" {
		t.Skip("set CARVE_GPU_TESTS=1 to run on a GPU")
	}
}
