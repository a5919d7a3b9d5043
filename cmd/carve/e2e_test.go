// The harness of the tests that run the built carve: carve and the shim
// built once, the recorded H100's topology cached and the driver's /proc
// files faked.

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/shimtest"
	"github.com/carve-gpu/carve/internal/topo"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// builtCarve builds the carve binary with the shim beside it (once), and
// sandboxes the test: the recorded H100's topology cached, the driver's
// /proc files faked so carve finds it without a driver.
func builtCarve(t *testing.T) (carveBin, shim string) {
	t.Helper()
	top := sandbox(t)
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "carve-e2e-"); buildErr != nil {
			return
		}
		if buildErr = os.Symlink(shimtest.Build(t).Shim, filepath.Join(buildDir, "libcarve.so")); buildErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(buildDir, "carve"), ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	fakeDriverProc(t, top)
	return filepath.Join(buildDir, "carve"), filepath.Join(buildDir, "libcarve.so")
}

// fakeDriverProc fakes the driver's /proc files for top's GPU, so that
// carve finds its cached topology without a driver, in a carve this test
// runs and in the test's own process.
func fakeDriverProc(t *testing.T, top *topo.Topology) {
	t.Helper()
	proc := t.TempDir()
	gpu := filepath.Join(proc, "driver/nvidia/gpus/0000:00:06.0")
	os.MkdirAll(gpu, 0o755)
	os.WriteFile(filepath.Join(gpu, "information"), []byte("GPU UUID: \t "+top.UUID+"\n"), 0o644)
	os.WriteFile(filepath.Join(proc, "driver/nvidia/version"), []byte("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "+top.Driver+"  Release Build\n"), 0o644)
	t.Setenv("CARVE_PROC_ROOT", proc)
	old := cuda.ProcRoot
	cuda.ProcRoot = proc
	t.Cleanup(func() { cuda.ProcRoot = old })
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
}
