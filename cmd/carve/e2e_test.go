package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunEndToEnd builds carve and the shim and runs a program under
// 'carve run' on a machine without a GPU: the topology comes from the cache
// through the driver's /proc files (faked), the shim loads, finds the
// control block carve made for the pid, finds no driver and lets the
// program run; the program's exit status comes back through carve.
func TestRunEndToEnd(t *testing.T) {
	top := sandbox(t)
	bin := t.TempDir()
	carveBin, shim := filepath.Join(bin, "carve"), filepath.Join(bin, "libcarve.so")
	build := exec.Command("go", "build", "-o", carveBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command("cc", "-O2", "-fPIC", "-shared", "-o", shim, "../../shim/carve.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	proc := t.TempDir()
	gpu := filepath.Join(proc, "driver/nvidia/gpus/0000:00:06.0")
	os.MkdirAll(gpu, 0o755)
	os.WriteFile(filepath.Join(gpu, "information"), []byte("GPU UUID: \t "+top.UUID+"\n"), 0o644)
	os.WriteFile(filepath.Join(proc, "driver/nvidia/version"), []byte("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "+top.Driver+"  Release Build\n"), 0o644)
	t.Setenv("CARVE_PROC_ROOT", proc)
	os.Unsetenv("CUDA_VISIBLE_DEVICES")

	cmd := exec.Command(carveBin, "run", "-t", "0-3", "--", "sh", "-c",
		`wc -c <"$CARVE_CTL_DIR/$$"; echo "preload=$LD_PRELOAD"; echo "conn=$CUDA_DEVICE_MAX_CONNECTIONS"; exit 7`)
	out, err := cmd.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v (want status 7); stdout %q", err, out)
	}
	stderr := string(ee.Stderr)
	for _, want := range []string{"512\n", "preload=" + shim, "conn=\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout %q lacks %q", out, want)
		}
	}
	for _, want := range []string{"on TPCs 0-3 (4 of 66)", "MPS daemon is not running"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}

	err = exec.Command(carveBin, "run", "-t", "0", "--", "/nonexistent/prog").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 127 {
		t.Errorf("missing program: %v, want exit status 127", err)
	}
}
