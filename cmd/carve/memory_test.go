// Tests of carve run --mem and carve set --mem: limits within the GPU's
// memory, what is said, and what a program gets.

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/shimtest"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

const gib = 1 << 30

// tenant starts a process that sleeps until the test ends, with env, and
// gives it a block on TPC 65 of top with the given memory limit and flags;
// it returns its pid.
func tenant(t *testing.T, top *topo.Topology, limit uint64, flags uint32, env ...string) int {
	t.Helper()
	dir, err := ctl.Dir()
	if err != nil {
		t.Fatal(err)
	}
	p := exec.Command("sleep", "30")
	p.Env = env
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	mask, err := partition.Mask(top, partition.Set{65})
	if err != nil {
		t.Fatal(err)
	}
	h, err := ctl.Create(dir, ctl.Init{PID: p.Process.Pid, Flags: flags, MemLimit: limit, Comm: []string{"sleep", "30"}, Parts: []ctl.Part{{Mask: mask, Live: top.Live(), Node: ctl.NodeName(top.UUID)}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	return p.Process.Pid
}

// TestRunMemoryOverCommitted: carve run --mem that the GPU's memory does
// not hold beside another tenant's limit fails, saying what is free, and
// says nothing before; none of these runs is placed (one that was would
// exec the program in place of the test).
func TestRunMemoryOverCommitted(t *testing.T) {
	top := sandbox(t)
	fakeDriverProc(t, top)
	t.Setenv("CARVE_SHIM", shimtest.Build(t).Shim)
	pid := tenant(t, top, 70*gib, 0)
	_, stderr, err := carve(t, "run", "-n", "4", "--mem", "12G", "--", "true")
	if err == nil || err.Error() == "" || stderr != "" {
		t.Fatalf("run --mem 12G beside 70G: %v, said %q", err, stderr)
	}
	for _, want := range []string{"over-committed", "a limit of 12G asked for (12.8G with its context, outside MPS)",
		"8.4G of the GPU's 79.2G are free", "pid " + itoa(pid) + " (sleep 30) holds 70.8G"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run --mem 12G beside 70G: %v, want it to say %q", err, want)
		}
	}
}

// TestSetMemory: carve set --mem changes a tenant's limit within the GPU's
// memory, --no-mem takes it off; under MPS a process keeps the limit it
// started with, and may only be lowered.
func TestSetMemory(t *testing.T) {
	top := sandbox(t)
	plain := tenant(t, top, 70*gib, 0)
	client := tenant(t, top, 4*gib, ctl.FlagMPS, mps.PinnedMemLimit(0, 4*gib))
	p, c := itoa(plain), itoa(client)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", p, "--mem", "80G"}, "more than the GPU's 79.2G"},
		{[]string{"-p", p, "--mem", "75G"}, "over-committed"},
		{[]string{"-p", p, "--mem", "1G", "--no-mem"}, "exclude each other"},
		{[]string{"-p", p, "--mem", "1G", "-n", "4", "-o", "json"}, "not both"},
		{[]string{"-p", c, "--mem", "5G"}, "started under MPS with a memory limit of 4G"},
		{[]string{"-p", c, "--no-mem"}, "lowered, not raised"},
	} {
		if _, _, err := carve(t, append([]string{"set"}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("set %s: %v, want an error with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	if out, _, err := carve(t, "set", "-p", p, "--mem", "60G"); err != nil || !strings.Contains(out, "memory limit 70G -> 60G") {
		t.Errorf("set --mem 60G: %q %v", out, err)
	}
	if out, _, err := carve(t, "set", "-p", p, "--mem", "75G", "--share"); err != nil || !strings.Contains(out, "60G -> 75G") {
		t.Errorf("set --mem 75G --share: %q %v", out, err)
	}
	if out, _, err := carve(t, "set", "-p", p, "--no-mem"); err != nil || !strings.Contains(out, "75G -> none") {
		t.Errorf("set --no-mem: %q %v", out, err)
	}
	out, _, err := carve(t, "set", "-p", c, "--mem", "25%", "-o", "json")
	var got map[string]any
	if err == nil {
		err = json.Unmarshal([]byte(out), &got)
	}
	if err == nil || !strings.Contains(err.Error(), "started under MPS") {
		t.Errorf("25%% of the GPU for an MPS client started with 4G: %v", err)
	}
	out, _, err = carve(t, "set", "-p", c, "--mem", "2G", "-o", "json")
	if err == nil {
		err = json.Unmarshal([]byte(out), &got)
	}
	if err != nil || got["memory_limit"] != float64(2*gib) || got["memory_limit_before"] != float64(4*gib) {
		t.Errorf("set --mem 2G -o json: %q %v", out, err)
	}
	// a set of TPCs and memory at once
	if out, _, err := carve(t, "set", "-p", p, "-t", "0-3", "--share", "--mem", "1G"); err != nil ||
		!strings.Contains(out, "none -> 1G") || !strings.Contains(out, "TPCs 65 -> 0-3") {
		t.Errorf("set -t and --mem: %q %v", out, err)
	}
}

// TestRunMemoryEnv: under carve's MPS a program run with --mem gets the
// driver's limit for its GPU, a share resolved against the GPU's memory;
// outside MPS it gets none (the shim's account holds it); run says the
// limit, and that a tenant without one shares the GPU. The shim finds no
// driver and lets the program run: what is checked is the environment
// carve hands the program.
func TestRunMemoryEnv(t *testing.T) {
	carveBin, _ := builtCarve(t)
	top := topotest.H100(t)
	shim := shimtest.Build(t).Shim
	// carve's MPS daemon "runs": its pid file names a live process
	pipe := mps.Default().PipeDir()
	os.MkdirAll(pipe, 0o700)
	os.WriteFile(filepath.Join(pipe, "nvidia-cuda-mps-control.pid"), []byte(itoa(os.Getpid())), 0o644)
	tenant(t, top, 0, 0)
	for _, tc := range []struct {
		args      []string
		env, said string
		note      bool // of the tenant without a limit
	}{
		{[]string{"-n", "4", "--mem", "12G"}, "0=12G", "memory limit 12G", true},
		{[]string{"-n", "4", "--mem", "60%", "--device", "0"}, "0=48647M", "memory limit 47.5G", true},
		{[]string{"--no-mps", "-n", "4", "--mem", "4G"}, "", "memory limit 4G", true},
		{[]string{"-n", "4"}, "", "(4 of 66)\n", false},
	} {
		args := append(append([]string{"run", "--shim", shim}, tc.args...), "--", "sh", "-c", `echo "$`+mps.VarPinnedMemLimit+`"`)
		cmd := exec.Command(carveBin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != tc.env {
			t.Errorf("carve %s: %v, the program saw %s=%q, want %q", strings.Join(args, " "), err, mps.VarPinnedMemLimit,
				strings.TrimSpace(string(out)), tc.env)
		}
		if !strings.Contains(stderr.String(), tc.said) {
			t.Errorf("carve %s said %q, want %q", strings.Join(args, " "), stderr.String(), tc.said)
		}
		if unlimited := strings.Contains(stderr.String(), "1 tenant(s) without a memory limit share this GPU"); unlimited != tc.note {
			t.Errorf("carve %s: the note of the tenant without a limit: %v (%q)", strings.Join(args, " "), unlimited, stderr.String())
		}
	}
}
