// The conventions every command keeps: --version, argument errors that say
// what was expected, errors before notes, and a file of another kind than
// the one wanted named as such.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/shimtest"
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

// TestArgumentErrors: a missing or extra argument, or a command a group
// does not have, is an error that says what the command wants.
func TestArgumentErrors(t *testing.T) {
	sandbox(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "-n", "4"}, []string{"carve run needs a command", "[flags] -- COMMAND [ARGS...]"}},
		{[]string{"run", "-n", "4", "--"}, []string{"carve run needs a command"}},
		{[]string{"predict"}, []string{"carve predict needs a kernel and its partition", "KERNEL:TPCS"}},
		{[]string{"plan"}, []string{"carve plan needs a kernel and its deadline", "KERNEL:DEADLINE_MS"}},
		{[]string{"bench", "fit"}, []string{"carve bench fit needs an evaluation", "TRAIN.json"}},
		{[]string{"bench", "report"}, []string{"carve bench report takes one result file, not 0", "RESULT.json"}},
		{[]string{"bench", "report", "a.json", "b.json"}, []string{"not 2"}},
		{[]string{"bench", "overhed"}, []string{`carve bench has no command "overhed"`, "overhead", "report"}},
		{[]string{"mps", "begin"}, []string{`carve mps has no command "begin": want one of start, status, stop`}},
		{[]string{"daemon", "--listen", "bad"}, []string{`address "bad": want HOST:PORT`}},
	} {
		_, _, err := carve(t, tc.args...)
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("carve %s: %v, want an error with %q", strings.Join(tc.args, " "), err, want)
			}
		}
	}
	// a group named alone still shows its help
	if out, _, err := carve(t, "mps"); err != nil || !strings.Contains(out, "Available Commands") {
		t.Errorf("carve mps: %v, %q; want its help", err, out)
	}
}

// TestRunErrorsBeforeNotes: carve run says nothing else before an error
// that stops it, such as that MPS is not running.
// The placements asked for here all fail: one that succeeded would exec
// the program in place of the test.
func TestRunErrorsBeforeNotes(t *testing.T) {
	fakeDriverProc(t, sandbox(t))
	t.Setenv("CARVE_SHIM", shimtest.Build(t).Shim)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "99"}, "99"},
		{[]string{"-g", "20"}, "20"},
		{[]string{"-n", "67"}, "67 TPCs asked for"},
		{[]string{"--be", "--be-floor", "70"}, "70"},
		{[]string{"-n", "4", "--mem", "100G"}, "memory limit 100G: more than the GPU's 79.2G"},
	} {
		args := append(append([]string{"run"}, tc.args...), "--", "true")
		_, stderr, err := carve(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("carve %s: %v, want an error with %q", strings.Join(args, " "), err, tc.want)
		}
		if stderr != "" {
			t.Errorf("carve %s: said %q before its error %q", strings.Join(args, " "), stderr, err)
		}
	}
}

// TestFileOfAnotherKind: a file given where carve wants one it wrote, and
// that is not one, is named with what it is not and the file that was
// wanted, not with a bare JSON error.
func TestFileOfAnotherKind(t *testing.T) {
	sandbox(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "passwd")
	os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte("{}\n"), 0o644)
	profiles := copyDir(t, filepath.Join(recorded, "profiles"))
	profile := filepath.Join(profiles, "vadd.json")
	evaluation := filepath.Join(recorded, "eval-seed1", "evaluation.json")
	stray := copyDir(t, profiles)
	os.WriteFile(filepath.Join(stray, "notes.json"), []byte(`{"note": "kept here"}`), 0o644)

	result := []string{"is not a carve benchmark result (", "want the BENCHMARK.json that 'carve bench BENCHMARK --out DIR' writes"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"bench", "report", text}, append([]string{text + " is not a carve benchmark result (invalid character"}, result...)},
		{[]string{"bench", "report", empty}, append([]string{"(no benchmark name)"}, result...)},
		{[]string{"bench", "report", profile}, result},
		{[]string{"bench", "report", evaluation}, result},
		{[]string{"predict", "--profiles", stray, "vadd:22"}, []string{"notes.json is not a carve profile", "'carve profile --out DIR'"}},
		{[]string{"predict", "--profiles", profiles, "--calibration", text, "vadd:22"}, []string{text + " is not a carve calibration", "'carve bench fit'"}},
		{[]string{"predict", "--profiles", profiles, "--calibration", empty, "vadd:22"}, []string{empty + " is not a carve calibration"}},
		{[]string{"bench", "fit", "--profiles", profiles, "--out", dir, text}, []string{text + " is not a carve evaluation", "'carve bench predict --out DIR'"}},
		{[]string{"bench", "fit", "--profiles", profiles, "--out", dir, profile}, []string{profile + " is not a carve evaluation (no co-run groups)"}},
	} {
		_, _, err := carve(t, tc.args...)
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("carve %s: %v, want an error with %q", strings.Join(tc.args, " "), err, want)
			}
		}
	}
}

// TestBenchReportRefusesWhatItCannotShow: carve bench report of a result
// with nothing to plot fails, saying so, and leaves no plot; a FIFO or a
// device is refused at once, not read.
func TestBenchReportRefusesWhatItCannotShow(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "granularity.json")
	os.WriteFile(bare, []byte(`{"benchmark":"granularity"}`), 0o644)
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{bare, "cannot plot the granularity result: it has no points"},
		{fifo, fifo + " is not a regular file"},
		{"/dev/zero", "/dev/zero is not a regular file"},
	} {
		done := make(chan error, 1)
		go func() { _, _, err := carve(t, "bench", "report", tc.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("carve bench report %s: %v, want an error with %q", tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("carve bench report %s: still reading after 10 s", tc.path)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 2 {
		t.Errorf("bench report left %v, want only the result and the FIFO", files)
	}
}
