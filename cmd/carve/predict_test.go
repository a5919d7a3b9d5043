// Tests of carve predict and carve plan on the profiles recorded on the
// H100, and the helpers that copy them.

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The profiles and co-runs recorded on the H100.
const recorded = "../../results/h100-580.159.04-2026-11-22/predict"

func TestPredictAndPlan(t *testing.T) {
	sandbox(t)
	profiles := filepath.Join(recorded, "profiles")
	calib := filepath.Join(recorded, "fit", "calibration.json")
	out, _, err := carve(t, "predict", "--profiles", profiles, "--calibration", calib, "vadd:22", "saxpy:22", "raytrace:22")
	if err != nil {
		t.Fatal(err)
	}
	// two memory-bound kernels slow each other; raytrace is untouched
	for _, want := range []string{"vadd      22", "raytrace  22", "1.00x"} {
		if !strings.Contains(out, want) {
			t.Errorf("predict output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = carve(t, "predict", "--profiles", profiles, "--model", "paper", "-o", "json", "vadd:22", "raytrace:11")
	var paper struct {
		Windows []struct{ Running []int } `json:"windows"`
	}
	if err != nil || json.Unmarshal([]byte(out), &paper) != nil || len(paper.Windows) != 2 {
		t.Errorf("paper model JSON: %v\n%s", err, out)
	}
	out, _, err = carve(t, "plan", "--profiles", profiles, "--calibration", calib, "raytrace:3", "vadd:1.2")
	if err != nil || !strings.Contains(out, "of 66 TPCs") {
		t.Errorf("plan: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--profiles", profiles, "raytrace:0.5"}, "no placement meets the deadlines"},
		{[]string{"predict", "--profiles", profiles, "vadd:3"}, "not profiled on 6 SMs"},
		{[]string{"predict", "--profiles", profiles, "bert:11"}, "no profile of bert"},
		{[]string{"predict", "--profiles", profiles, "vadd"}, "want KERNEL:TPCS"},
		{[]string{"predict", "--profiles", profiles, "--model", "magic", "vadd:11"}, `unknown model "magic"`},
		{[]string{"predict", "--profiles", profiles, "--calibration", filepath.Join(profiles, "vadd.json"), "vadd:11"}, "vadd.json is not a carve calibration"},
		{[]string{"predict", "--profiles", t.TempDir(), "vadd:11"}, "no profiles in"},
		{[]string{"profile", "bert"}, `unknown kernel "bert"`},
		{[]string{"profile", "--tpcs", "0"}, "want a whole number from 1"},
		{[]string{"profile", "--tpcs", "70"}, "libcuda.so.1 could not be loaded"}, // checked against the GPU's 66
		{[]string{"bench", "predict", "--groups", "0"}, "want at least 1"},
		{[]string{"profile", "--name", "job", "--"}, "nothing after --"},
		{[]string{"profile", "vadd", "--name", "job", "--", "ls"}, "not both"},
		{[]string{"profile", "--", "ls"}, `--name ""`},
		{[]string{"profile", "--name", "a/b", "--", "ls"}, `--name "a/b"`},
		{[]string{"memmap", "--pages", "0"}, "want at least 1"},
		{[]string{"bench", "colour", "--pages", "1"}, "--pages: at least 2"},
		{[]string{"memmap", "-o", "yaml"}, "unknown output format"},
		{[]string{"memmap"}, "libcuda.so.1 could not be loaded"},
	} {
		if _, _, err := carve(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("carve %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// copyDir copies the files of dir into a temporary directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}
