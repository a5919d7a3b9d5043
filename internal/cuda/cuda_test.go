package cuda

import (
	"errors"
	"testing"
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
