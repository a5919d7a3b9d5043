// Package shimtest_test holds the tests of libcarve.so, the C files of
// shim/, against a fake libcuda.so.1 (shim/fake/): the shim is
// built with the system C compiler (internal/shimtest), loaded with
// LD_PRELOAD into a small C program that stands in for an unmodified CUDA
// program (shim/test/driver/), and driven through the same control blocks
// carve writes (internal/ctl). Each file tests one of the shim's concepts
// and is named after its file: mem_test.go shim/mem.c, and so on.
//
// This one holds the driver process under the shim, which every test
// starts, and the shim at load time (main.c): the mask applied and
// followed, and the refusals.

package shimtest_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// artifacts compiles the shim, the fake driver and the test programs once.
func artifacts(t testing.TB) shimtest.Built { return shimtest.Build(t) }

// proc is a driver process under the shim.
type proc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
}

func (p *proc) launch(t testing.TB, version int) (mask [4]uint32, enable uint32) {
	t.Helper()
	fmt.Fprintf(p.in, "launch %#x\n", version)
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("driver died: %v; stderr: %s", err, p.stderr)
	}
	var called int
	if _, err := fmt.Sscanf(line, "mask %x %x %x %x %d %d", &mask[0], &mask[1], &mask[2], &mask[3], &enable, &called); err != nil {
		t.Fatalf("driver said %q: %v", line, err)
	}
	if called != 1 {
		t.Fatalf("the launch callback was not called; stderr: %s", p.stderr)
	}
	return mask, enable
}

// wait closes stdin and returns the exit code.
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("driver did not exit")
	}
	return -1
}

// startExec starts the driver the way carve run does: the control block is
// made for the pid first, then that same process execs into the program.
// It returns with the program loaded (or exited, if the shim refused it).
func startExec(t testing.TB, dir string, in ctl.Init, env ...string) (*proc, *ctl.Handle) {
	t.Helper()
	a := artifacts(t)
	args := []string{"-c", `read x; exec env "$@"`, "sh", "LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + dir, "CARVE_LIBCUDA=" + a.Fake}
	cmd := exec.Command("/bin/sh", append(append(args, env...), a.Driver)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	p := spawn(t, cmd)
	in.PID = cmd.Process.Pid
	h, err := ctl.Create(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if in.Class == ctl.ClassLS {
		seat(t, dir, in)
	}
	fmt.Fprintln(p.in, "go")
	return p, h
}

// seat seats the LS tenant in describes in the node block of each of its
// GPUs in dir, where there is one, as carve's placement does.
func seat(t testing.TB, dir string, in ctl.Init) {
	t.Helper()
	for _, p := range in.Parts {
		if p.Node == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, p.Node)); err != nil {
			continue
		}
		n, err := ctl.OpenNode(dir, p.Node, p.Live)
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.Give(ctl.Seat{PID: in.PID, Node: p.Node, Reserved: p.Mask.Enable().And(p.Live), Dir: dir})
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// startNoShim starts the driver program on the fake driver without the
// shim, the baseline of the cost benchmarks.
func startNoShim(t testing.TB) *proc {
	t.Helper()
	a := artifacts(t)
	cmd := exec.Command(a.Driver)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "CARVE_LIBCUDA=" + a.Fake}
	return startCmd(t, cmd)
}

// startCmd starts cmd, a driver program made ready to run, with pipes to
// its input and output, and waits until it says it is ready.
func startCmd(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := spawn(t, cmd)
	p.ready(t)
	return p
}

// spawn starts cmd with pipes to its input and output and its stderr
// kept.
func spawn(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stderr: &strings.Builder{}}
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	p.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *proc) ready(t testing.TB) {
	t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("driver did not start: %q %v; stderr: %s", line, err, p.stderr)
	}
}

// ask sends one command to the driver and returns its answer.
func (p *proc) ask(t testing.TB, cmd string) string {
	t.Helper()
	fmt.Fprintln(p.in, cmd)
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: driver died: %v; stderr: %s", cmd, err, p.stderr)
	}
	return strings.TrimSpace(line)
}

// maskLine is what the driver says of a launch with the mask m.
func maskLine(m [4]uint32) string {
	return fmt.Sprintf("mask %08x %08x %08x %08x 1 1", m[0], m[1], m[2], m[3])
}

// live has bits 0-3 and 9-16 live, like the start of the H100's bit space.
var live = [4]uint32{0x0001fe0f, 0, 0, 0}

func enableOnly(bits ...int) [4]uint32 {
	m := [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
	for _, b := range bits {
		m[b/32] &^= 1 << (b % 32)
	}
	return m
}

func TestShimAppliesAndFollowsMask(t *testing.T) {
	dir := t.TempDir()
	first := enableOnly(0, 1, 2)
	p, h := startExec(t, dir, ctl.Init{Comm: []string{"driver"}, Parts: []ctl.Part{{Mask: first, Live: live}}})
	p.ready(t)

	if m, en := p.launch(t, 0x40); m != first || en != 1 {
		t.Fatalf("first launch: mask %x enable %d, want %x 1", m, en, first)
	}
	second := enableOnly(9, 10)
	gen, err := h.SetMask(second, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if m, _ := p.launch(t, 0x40); m != second {
			t.Fatalf("launch %d after set: mask %x, want %x", i, m, second)
		}
	}
	s := h.Snapshot()
	if s.Launches != 4 || s.State != ctl.StateHooked || s.TMDVersion != 0x40 || s.AppliedGen != gen {
		t.Errorf("snapshot after 4 launches: %+v (want launches 4, state hooked, version 0x40, applied gen %d)", s, gen)
	}
	if s.LastLaunch.IsZero() || time.Since(s.LastLaunch) > time.Minute {
		t.Errorf("last launch time %v", s.LastLaunch)
	}

	// A mask enabling only dead bits is never written: the previous one stays.
	if _, err := h.SetMask(enableOnly(5, 6), 4); err != nil {
		t.Fatal(err)
	}
	if m, _ := p.launch(t, 0x40); m != second {
		t.Fatalf("dead-only mask: launch got %x, want the previous %x", m, second)
	}
	if r := h.Snapshot().Refused; r != 1 {
		t.Errorf("refused = %d, want 1", r)
	}

	// Volta-style descriptors take the low two words and no enable bit.
	if m, en := p.launch(t, 0x20); m[0] != second[0] || m[1] != second[1] || m[2] != 0 || en != 0 {
		t.Errorf("volta launch: %x enable %d", m, en)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, p.stderr)
	}
	// stderr is complete only once the process has exited
	if !strings.Contains(p.stderr.String(), "enables no live TPC") {
		t.Errorf("no warning about the dead-only mask on stderr: %q", p.stderr)
	}
}

func TestShimRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        []string
		init       [4]uint32 // the block's first mask; zero: TPC 0 only
		flags      uint32
		version    int // launch this version after ready; 0: none
		wantCode   int
		wantState  uint32
		wantStderr string
	}{
		{name: "unknown descriptor version", version: 0x10, wantCode: 86, wantState: ctl.StateHooked, wantStderr: "version 0x10 is not supported"},
		{name: "unknown version allowed", version: 0x10, flags: ctl.FlagAllowUnpartitioned, wantState: ctl.StateHooked},
		{name: "no export table", env: []string{"FAKECUDA_NO_TABLE=1"}, wantCode: 86, wantState: ctl.StateUnhooked, wantStderr: "refusing to run unpartitioned"},
		{name: "no export table allowed", env: []string{"FAKECUDA_NO_TABLE=1", "CARVE_ALLOW_UNPARTITIONED=1"}, wantState: ctl.StateUnhooked, wantStderr: "running on all TPCs"},
		{name: "table only after cuInit", env: []string{"FAKECUDA_NEED_INIT=1"}, version: 0x40, wantState: ctl.StateHooked},
		{name: "partition of dead TPCs only", init: enableOnly(5, 6), version: 0x40, wantCode: 86, wantState: ctl.StateHooked, wantStderr: "enables no live TPC"},
		{name: "no driver library", env: []string{"CARVE_LIBCUDA=/nonexistent/libcuda.so.1"}, wantCode: 2, wantState: ctl.StateNoDriver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mask := tc.init
			if mask == ([4]uint32{}) {
				mask = enableOnly(0)
			}
			p, h := startExec(t, t.TempDir(), ctl.Init{Flags: tc.flags, Parts: []ctl.Part{{Mask: mask, Live: live}}}, tc.env...)
			if tc.wantCode == 0 || tc.version != 0 {
				p.ready(t)
			}
			if tc.version != 0 {
				fmt.Fprintf(p.in, "launch %#x\n", tc.version)
			}
			code := p.wait(t)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.wantCode, p.stderr)
			}
			if s := h.Snapshot().State; s != tc.wantState {
				t.Errorf("state %d, want %d", s, tc.wantState)
			}
			if !strings.Contains(p.stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", p.stderr, tc.wantStderr)
			}
		})
	}
}

func TestShimWithoutBlockRefuses(t *testing.T) {
	a := artifacts(t)
	cmd := exec.Command(a.Driver)
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_CTL_DIR=" + t.TempDir(), "CARVE_LIBCUDA=" + a.Fake}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 86 || !strings.Contains(string(out), "no control block") {
		t.Fatalf("err %v, output %q: want exit 86 and a message", err, out)
	}
}
