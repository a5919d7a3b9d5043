// Tests of claims' CDI specs (cdi.go) in containers made by hand
// (dratest): each program is pid 1 of its own PID namespace, yet runs on
// its claim's partition, holds its node slot and is gated by tide.

package dra

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
	"github.com/carve-gpu/carve/internal/dra/dratest"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// container is the shim's test program run with a claim's CDI device
// applied by hand (dratest), as the pid 1 of its own PID namespace.
type container struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err *strings.Builder
}

func startContainer(t *testing.T, td *testDriver, uid string) *container {
	t.Helper()
	b := shimtest.Build(t)
	cmd, _, err := dratest.Command(td.Paths.CDIDir, []string{CDIDeviceID(uid)},
		[]string{"PATH=/usr/bin:/bin", "CARVE_DEBUG=1", "CARVE_LIBCUDA=" + b.Fake}, b.Driver)
	if err != nil {
		t.Fatal(err)
	}
	c := &container{cmd: cmd, err: &strings.Builder{}}
	c.in, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	c.out = bufio.NewReader(out)
	cmd.Stderr = c.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line := c.ask(t, ""); line != "ready" {
		t.Fatalf("container of %s: %q; stderr: %s", uid, line, c.err)
	}
	return c
}

// ask sends a command line (none if empty) and returns the answer.
func (c *container) ask(t *testing.T, line string) string {
	t.Helper()
	if line != "" {
		fmt.Fprintln(c.in, line)
	}
	got, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the container's program ended: %v; stderr: %s", err, c.err)
	}
	return strings.TrimSpace(got)
}

// TestContainers: claims' CDI edits applied to containers by hand. Each
// program is pid 1 of its own PID namespace, yet its partition is the
// claim's, the node sees each running (by the lock on its block), two LS
// claims' tenants hold separate node slots, a BE claim's tenant is held
// back while an LS one is busy, and a container's end frees its slot.
func TestContainers(t *testing.T) {
	if err := dratest.Available(); err != nil {
		t.Skip(err)
	}
	td := newTestDriver(t)
	td.Paths.Shim = shimtest.Build(t).Shim
	cfg := func(body string) string {
		return `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig",` + body + `}`
	}
	plain := td.claim(t, "plain", 8)
	ls1 := td.claim(t, "ls1", 8, cfg(`"class":"ls"`))
	ls2 := td.claim(t, "ls2", 8, cfg(`"class":"ls"`))
	be := td.claim(t, "be", 0, cfg(`"class":"be","epoch":"300ms","beShare":0`))
	for name, r := range td.prepare(t, plain, ls1, ls2, be) {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	top := td.GPUs[0].Topology

	p := startContainer(t, td, "uid-plain")
	mask, err := partition.Mask(top, td.reserved(t)["plain"])
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("mask %x %x %x %x", mask[0], mask[1], mask[2], mask[3])
	if got := p.ask(t, "launch 0x40"); !strings.HasPrefix(got, want) {
		t.Errorf("a launch in the plain claim's container: %q, want %s (its TPCs %s)", got, want, td.reserved(t)["plain"])
	}
	if got := p.ask(t, "sms"); got != "sms 16 rc 0" {
		t.Errorf("SM count seen in the container: %q, want 16", got)
	}

	c1 := startContainer(t, td, "uid-ls1")
	startContainer(t, td, "uid-ls2")
	cb := startContainer(t, td, "uid-be")
	claims, _, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if len(c.Procs) != 1 || c.Procs[0].PID != 1 {
			t.Errorf("claim %s: processes %+v, want its container's pid 1", c.Name(), c.Procs)
		}
	}
	n, err := ctl.OpenNode(td.Paths.RuntimeDir, ctl.NodeName(top.UUID), top.Live())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if slots := n.LS(); len(slots) != 2 || slots[0].PID != 1 || slots[1].PID != 1 {
		t.Fatalf("node slots %+v: want the two LS containers pid 1 in two slots; %s", slots, c1.err)
	}

	if got := cb.ask(t, "burst 1"); !strings.HasPrefix(got, "burst ") {
		t.Fatal(got)
	}
	c1.ask(t, "dur 100000000")
	c1.ask(t, "klaunch kernel") // 100 s on the GPU: the LS claim is busy
	start := time.Now()
	cb.ask(t, "burst 1")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("a BE launch beside a busy LS container took %v; want it held back for an epoch (300 ms)", d)
	}

	c1.cmd.Process.Kill()
	c1.cmd.Wait()
	if freed := n.Reclaim(); freed != 1 || len(n.LS()) != 1 {
		t.Errorf("after the LS container ended: %d slots freed, %d left; want 1 and 1", freed, len(n.LS()))
	}
	claims, _, _ = ctl.Claims(td.Paths.RuntimeDir)
	for _, c := range claims {
		if c.Name() == "ns/ls1" && len(c.Procs) != 0 {
			t.Errorf("the ended container's process is still listed: %+v", c.Procs)
		}
	}
	if _, err := os.Stat(filepath.Join(td.Paths.RuntimeDir, "claims", "uid-ls1", "1")); err == nil {
		t.Error("the ended process's block was kept")
	}
}
