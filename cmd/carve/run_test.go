// Tests of carve run end to end: the built carve and shim, on a machine
// without a GPU.

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/shimtest"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// TestRunEndToEnd builds carve and the shim and runs a program under
// 'carve run' on a machine without a GPU: the topology comes from the cache
// through the driver's /proc files (faked), the shim loads, finds the
// control block carve made for the pid, finds no driver and lets the
// program run; the program's exit status comes back through carve.
func TestRunEndToEnd(t *testing.T) {
	carveBin, shim := builtCarve(t)
	cmd := exec.Command(carveBin, "run", "-t", "0-3", "--", "sh", "-c",
		`wc -c <"$CARVE_CTL_DIR/$$"; echo "preload=$LD_PRELOAD"; echo "conn=$CUDA_DEVICE_MAX_CONNECTIONS"; exit 7`)
	out, err := cmd.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		var stderr []byte
		if ok {
			stderr = ee.Stderr
		}
		t.Fatalf("exit: %v (want status 7); stdout %q, stderr %q", err, out, stderr)
	}
	stderr := string(ee.Stderr)
	for _, want := range []string{fmt.Sprintf("%d\n", ctl.Size), "preload=" + shim, "conn=\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout %q lacks %q", out, want)
		}
	}
	for _, want := range []string{"on TPCs 0-3 (4 of 66)", "MPS daemon is not running"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}

	out, err = exec.Command(carveBin, "run", "-q", "--no-mps", "-t", "0", "--", "sh", "-c", `echo "$CUDA_MPS_PIPE_DIRECTORY"`).Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "/none") {
		t.Errorf("--no-mps: the program's MPS pipe directory is %q (%v), want one where no server listens", out, err)
	}

	err = exec.Command(carveBin, "run", "-t", "0", "--", "/nonexistent/prog").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 127 {
		t.Errorf("missing program: %v, want exit status 127", err)
	}
}

// TestConcurrentRuns: 64 'carve run -n 1' started at the same moment each
// get a TPC of their own; then, with 2 TPCs left, 4 'carve run -n 16' are
// refused with the number still free and leave nothing behind.
func TestConcurrentRuns(t *testing.T) {
	carveBin, _ := builtCarve(t)
	start := func(n string, count int) (outs []string, codes []int) {
		outs, codes = make([]string, count), make([]int, count)
		var wg sync.WaitGroup
		cmds := make([]*exec.Cmd, count)
		ins := make([]io.WriteCloser, count)
		for i := range count {
			cmds[i] = exec.Command(carveBin, "run", "-q", "-n", n, "--", "sh", "-c", `echo "started $$"; read x`)
			ins[i], _ = cmds[i].StdinPipe()
			var stderr strings.Builder
			cmds[i].Stderr = &stderr
			out, _ := cmds[i].StdoutPipe()
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				line, _ := bufio.NewReader(out).ReadString('\n')
				if line == "" {
					cmds[i].Wait()
					line = stderr.String()
					codes[i] = cmds[i].ProcessState.ExitCode()
				}
				outs[i] = strings.TrimSpace(line)
			}()
		}
		wg.Wait()
		t.Cleanup(func() {
			for i := range cmds {
				ins[i].Close()
				cmds[i].Wait()
			}
		})
		return outs, codes
	}
	outs, _ := start("1", 64)
	for _, o := range outs {
		if !strings.HasPrefix(o, "started ") {
			t.Fatalf("a run failed: %q", o)
		}
	}
	dir, err := ctl.Dir()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ctl.List(dir)
	if err != nil || len(entries) != 64 {
		t.Fatalf("%d partitions registered, want 64: %v", len(entries), err)
	}
	var used partition.Set
	for _, e := range entries {
		set := partition.FromMask(topotest.H100(t), e.Mask)
		if len(set) != 1 || len(used.Intersect(set)) > 0 {
			t.Errorf("pid %d got TPCs %s; earlier ones hold %s", e.PID, set, used)
		}
		used = used.Union(set)
	}
	outs, codes := start("16", 4)
	for i, o := range outs {
		if codes[i] != 1 || !strings.Contains(o, "16 TPCs asked for, 2 of 66 are free") {
			t.Errorf("run -n 16 with 2 free: exit %d, %q", codes[i], o)
		}
	}
	if after, _ := ctl.List(dir); len(after) != 64 {
		t.Errorf("refused runs left blocks: %d live, want 64", len(after))
	}
}

// TestRunRefusesAnotherShim: carve run with a --shim (or $CARVE_SHIM) that
// is not carve's library (empty, text, another program) exits with status
// 86, naming the file and why, and does not run the program.
func TestRunRefusesAnotherShim(t *testing.T) {
	carveBin, _ := builtCarve(t)
	dir := t.TempDir()
	empty, text := filepath.Join(dir, "empty.so"), filepath.Join(dir, "passwd")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
	ran := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		shim, env, why string
	}{
		{empty, "", "not an ELF file"},
		{text, "", "not an ELF file"},
		{shimtest.Build(t).Driver, "", "an executable, not a shared library"},
		{"", empty, "not an ELF file"},
	} {
		args := []string{"run", "-t", "0"}
		if tc.shim != "" {
			args = append(args, "--shim", tc.shim)
		}
		cmd := exec.Command(carveBin, append(args, "--", "touch", ran)...)
		cmd.Env = append(os.Environ(), "CARVE_SHIM="+tc.env)
		out, err := cmd.CombinedOutput()
		name := tc.shim + tc.env
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 86 ||
			!strings.Contains(string(out), "shim "+name+": not carve's library: "+tc.why) {
			t.Errorf("shim %s: %v, said %q; want exit status 86 saying %q", name, err, out, tc.why)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("shim %s: the program ran", name)
		}
	}
}

// TestRunKernels: carve run --kernels reads the table (a relative path
// taken from where carve runs), writes its compact file beside the
// block and names it there, where carve ls finds the table's path; a table
// that is not one is refused before the program starts.
func TestRunKernels(t *testing.T) {
	carveBin, _ := builtCarve(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.json"), []byte(`{"gpu": "x", "kernels": {"_Z4copy": {"bytes": 7, "ns": 1, "pct": 90}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(carveBin, "run", "-q", "--no-mps", "-t", "0", "--kernels", "k.json", "--", "sh", "-c",
		`ls "$CARVE_CTL_DIR" | grep '^kernels-'; "$0" ls -o json`, carveBin)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"table": "`+filepath.Join(dir, "k.json")+`"`) {
		t.Fatalf("carve run --kernels: %v\n%s", err, out)
	}
	k, _ := ctl.ParseKernelTable([]byte(`{"gpu": "x", "kernels": {"_Z4copy": {"bytes": 7, "ns": 1, "pct": 90}}}`))
	if _, id, _ := k.Compact(); !strings.HasPrefix(string(out), ctl.KernelsFile(id)+"\n") {
		t.Errorf("the runtime directory's compact table: %q, want %s", out, ctl.KernelsFile(id))
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"kernels": {"k": {"pct": -1}}}`), 0o644)
	cmd = exec.Command(carveBin, "run", "-q", "--no-mps", "-t", "0", "--kernels", "bad.json", "--", "touch", "ran")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is not a kernel table") {
		t.Errorf("a bad table: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the program ran with a bad table")
	}
}
