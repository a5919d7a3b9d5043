// Tests of the cuda package that need no GPU: the driver's version from
// /proc, loading without a driver, error results, the sole GPU, and the
// layouts of the driver structs vmm.go and l2.go mirror.

package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

func TestParseProcVersion(t *testing.T) {
	for in, want := range map[string]string{
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 16 2025\nGCC version:  gcc version 12.3.0": "580.159.04",
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023":                                                                  "535.54.03",
		"garbage": "",
	} {
		if got := parseProcVersion(in); got != want {
			t.Errorf("parseProcVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadWithoutDriver(t *testing.T) {
	t.Setenv("CARVE_LIBCUDA", "/nonexistent/libcuda.so.1")
	if _, err := load(); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("load = %v, want ErrNoDriver", err)
	}
}

func TestResultError(t *testing.T) {
	if got := Result(999).Error(); got != "unknown CUresult 999" {
		t.Errorf("%q", got)
	}
}

func TestSoleGPU(t *testing.T) {
	root := t.TempDir()
	old := ProcRoot
	ProcRoot = root
	defer func() { ProcRoot = old }()
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	if got := SoleGPU(); got != "" {
		t.Errorf("no GPU listed: %q", got)
	}
	add := func(bus string) {
		d := filepath.Join(root, "driver/nvidia/gpus", bus)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "information"), []byte("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 33\nGPU UUID: \t GPU-36d1115c-8686-a651-23f9-95370db53f0f\nVideo BIOS: \t ??.??.??.??.??\n"), 0o644)
	}
	add("0000:00:06.0")
	if got := SoleGPU(); got != "GPU-36d1115c-8686-a651-23f9-95370db53f0f" {
		t.Errorf("one GPU: %q", got)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "0")
	if got := SoleGPU(); got != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES set: %q", got)
	}
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	add("0000:00:07.0")
	if got := SoleGPU(); got != "" {
		t.Errorf("two GPUs: %q", got)
	}
}

func TestVMMLayouts(t *testing.T) {
	// CUmemAllocationProp is 32 bytes and CUmemAccessDesc 12 in cuda.h
	// (CUDA 10.2 to 13.0).
	if s := unsafe.Sizeof(allocProp{}); s != 32 {
		t.Errorf("allocProp is %d bytes, want 32", s)
	}
	if s := unsafe.Sizeof(accessDesc{}); s != 12 {
		t.Errorf("accessDesc is %d bytes, want 12", s)
	}
	if s := unsafe.Sizeof(SMResource{}); s != 144 {
		t.Errorf("SMResource is %d bytes, want 144", s)
	}
}

func TestAccessWindowLayout(t *testing.T) {
	// CUaccessPolicyWindow: void*, size_t, float, two enums: 28 bytes, 32
	// with the alignment of its pointer.
	if s := unsafe.Sizeof(accessWindow{}); s != 32 {
		t.Errorf("accessWindow is %d bytes, want 32", s)
	}
	if o := unsafe.Offsetof(accessWindow{}.hitRatio); o != 16 {
		t.Errorf("hitRatio at %d, want 16", o)
	}
}
