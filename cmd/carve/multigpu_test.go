// Tests of carve topo, run and set on a node of two GPUs (the fake
// driver's).

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/shimtest"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// twoGPUNode sandboxes a carve binary on a node of two GPUs: the fake
// driver's (CARVE_LIBCUDA), whose UUIDs are the recorded H100's and
// topotest.Second's, with both topologies cached and the driver's /proc
// files faked for both.
func twoGPUNode(t *testing.T) (carveBin string, tops []*topo.Topology) {
	t.Helper()
	carveBin, _ = builtCarve(t)
	a, b := topotest.H100(t), topotest.Second(t)
	if err := topo.WriteCache(topo.CachePath(os.Getenv("CARVE_CACHE_DIR"), b.UUID, b.Driver), b); err != nil {
		t.Fatal(err)
	}
	gpu := filepath.Join(os.Getenv("CARVE_PROC_ROOT"), "driver/nvidia/gpus/0000:00:07.0")
	os.MkdirAll(gpu, 0o755)
	os.WriteFile(filepath.Join(gpu, "information"), []byte("GPU UUID: \t "+b.UUID+"\n"), 0o644)
	t.Setenv("CARVE_LIBCUDA", shimtest.Build(t).Fake)
	return carveBin, []*topo.Topology{a, b}
}

// TestTopoListsEveryGPU: carve topo shows every GPU, each its own
// topology; -o json is a list; --device N one.
func TestTopoListsEveryGPU(t *testing.T) {
	carveBin, tops := twoGPUNode(t)
	out, err := exec.Command(carveBin, "topo", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []topo.Topology
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 2 || got[0].UUID != tops[0].UUID || got[1].UUID != tops[1].UUID ||
		len(got[1].TPCs) != 62 {
		t.Fatalf("carve topo -o json: %v, %d GPUs; want both, the second with 62 TPCs", err, len(got))
	}
	out, err = exec.Command(carveBin, "topo").Output()
	if err != nil || !strings.Contains(string(out), "GPU 0: NVIDIA H100") || !strings.Contains(string(out), "GPU 1: NVIDIA H100 80GB HBM3  "+tops[1].UUID) ||
		!strings.Contains(string(out), "62 TPCs in 12 GPCs") {
		t.Errorf("carve topo: %v\n%s", err, out)
	}
	if out, err = exec.Command(carveBin, "topo", "--device", "1", "-o", "json").Output(); err == nil {
		err = json.Unmarshal(out, &got)
	}
	if err != nil || len(got) != 1 || got[0].UUID != tops[1].UUID {
		t.Errorf("carve topo --device 1 -o json: %v, %s", err, out)
	}
}

// TestRunOnTwoGPUs: carve run places a partition on each GPU named, and
// the program's kernels on each GPU run on that GPU's, with each device's
// SM count its partition's there; a launch on a GPU not named is refused.
func TestRunOnTwoGPUs(t *testing.T) {
	carveBin, tops := twoGPUNode(t)
	driver := shimtest.Build(t).Driver
	var want []string
	for i, spec := range []string{"0-3", "4-9"} {
		s, _ := partition.ParseTPCs(spec)
		set, _ := s.Resolve(tops[i], nil)
		m, _ := partition.Mask(tops[i], set)
		want = append(want, fmt.Sprintf("mask %08x %08x %08x %08x 1 1", m[0], m[1], m[2], m[3]))
	}
	cmd := exec.Command(carveBin, "run", "-t", "0-3", "--device", "0", "--device", "1:t=4-9", "--", driver)
	cmd.Stdin = strings.NewReader("klaunch kernel\nctx 1\nklaunch kernel\nsms 0\nsms 1\nquit\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 6 || lines[1] != want[0] || lines[3] != want[1] || lines[4] != "sms 8 rc 0" || lines[5] != "sms 12 rc 0" {
		t.Errorf("a program launching on both GPUs said %q; want %q on GPU 0, %q on GPU 1, 8 and 12 SMs", lines, want[0], want[1])
	}
	stderr := func(c *exec.Cmd) string {
		_, err := c.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return fmt.Sprintf("exit %d: %s", ee.ExitCode(), ee.Stderr)
		}
		return fmt.Sprint(err)
	}
	cmd = exec.Command(carveBin, "run", "-n", "4", "--device", "1", "--", driver)
	cmd.Stdin = strings.NewReader("klaunch kernel\n")
	if got := stderr(cmd); !strings.HasPrefix(got, "exit 86: ") || !strings.Contains(got, "on GPU 1 TPCs ") ||
		!strings.Contains(got, "launched on "+tops[0].UUID+", but the partition is of "+tops[1].UUID) {
		t.Errorf("a launch on GPU 0 of a partition on GPU 1: %s", got)
	}
	cmd = exec.Command(carveBin, "run", "-n", "64", "--device", "0,1", "--", "true")
	if got := stderr(cmd); !strings.Contains(got, "carve: GPU 1: 64 TPCs asked for, this GPU has 62") {
		t.Errorf("64 TPCs on each of two GPUs, the second of 62: %s", got)
	}
}

// TestSetOnOneOfTwoGPUs: carve set --device N moves a tenant's partition
// on GPU N, and leaves its partition on the other GPU.
func TestSetOnOneOfTwoGPUs(t *testing.T) {
	carveBin, tops := twoGPUNode(t)
	cmd := exec.Command(carveBin, "run", "-q", "-t", "0-3", "--device", "0,1", "--", "sh", "-c", "echo started; read x")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := fmt.Sprint(cmd.Process.Pid)
	if b, err := exec.Command(carveBin, "set", "-p", pid, "--device", "1", "-t", "8-11").CombinedOutput(); err != nil ||
		!strings.Contains(string(b), "TPCs 0-3 -> 8-11 (4 of 62)") {
		t.Fatalf("carve set --device 1: %v: %s", err, b)
	}
	dir, _ := ctl.Dir()
	h, err := ctl.Open(dir, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	parts := h.Snapshot().Parts()
	for i, want := range []string{"0-3", "8-11"} {
		if got := partition.FromMask(tops[i], parts[i].Mask).String(); got != want {
			t.Errorf("GPU %d: TPCs %s, want %s", i, got, want)
		}
	}
}
