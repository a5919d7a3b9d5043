// Tests of carve profile --table: a program's kernel table written from
// what ncu measured (a stand-in for ncu that writes a recorded CSV and runs
// the program), with the GPU's name from the driver (the fake's), and the
// flags it refuses.

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

func TestProfileTable(t *testing.T) {
	carveBin, _ := builtCarve(t)
	t.Setenv("CARVE_LIBCUDA", shimtest.Build(t).Fake)
	dir := t.TempDir()
	csv, err := filepath.Abs("../../internal/profile/testdata/ncu-kernels.csv")
	if err != nil {
		t.Fatal(err)
	}
	ncu := filepath.Join(dir, "ncu")
	script := "#!/bin/sh\n" +
		`while [ "$1" != --metrics ]; do if [ "$1" = --log-file ]; then log=$2; fi; shift; done; shift 2` + "\n" +
		`cp "` + csv + `" "$log" && exec "$@"` + "\n"
	if err := os.WriteFile(ncu, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(dir, "k.json")
	out, err := exec.Command(carveBin, "profile", "--ncu", ncu, "--table", table, "--", "touch", filepath.Join(dir, "ran")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrote "+table+": 2 kernels, 1 compute-bound (under 30% of the DRAM peak)") {
		t.Fatalf("carve profile --table: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the program did not run: %v", err)
	}
	k, err := ctl.ReadKernelTable(table)
	if err != nil || len(k.Kernels) != 2 || !strings.HasPrefix(k.GPU, "NVIDIA H100") {
		t.Errorf("the table written: %+v, %v", k, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--table", table}, "--table: name the program after --"},
		{[]string{"profile", "--table", table, "--ncu", "off", "--", "true"}, "--ncu off makes none"},
		{[]string{"profile", "--table", table, "saxpy", "--", "true"}, "not both"},
	} {
		if _, _, err := carve(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("carve %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
