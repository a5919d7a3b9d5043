package ctl_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// The fake driver's two GPUs (shim/fake/fakecuda.c); the first is that of
// the topology in internal/topo/testdata.
const (
	fakeGPU0 = "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17ef"
	fakeGPU1 = "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"
)

// unmasked is what a launch the shim wrote no mask into shows.
const unmasked = "mask 00000000 00000000 00000000 00000000 0 1"

func TestUUIDRoundTrip(t *testing.T) {
	for _, s := range []string{fakeGPU0, fakeGPU1} {
		u, err := ctl.ParseUUID(s)
		if err != nil || ctl.FormatUUID(u) != s {
			t.Errorf("%s: %x %v, formatted back %q", s, u, err, ctl.FormatUUID(u))
		}
	}
	if _, err := ctl.ParseUUID("MIG-72602ec6-310b-1ada-b02f-5c7ec60e17ef"); err != nil {
		t.Errorf("a MIG instance's UUID: %v", err)
	}
	for _, bad := range []string{"72602ec6-310b-1ada-b02f-5c7ec60e17ef", "GPU-72602ec6310b1adab02f5c7ec60e17ef", "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17eg", "GPU-0"} {
		if _, err := ctl.ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) took it", bad)
		}
	}
	if _, err := ctl.Create(t.TempDir(), ctl.Init{PID: 1, GPU: "GPU-0"}); err == nil {
		t.Error("Create took a block for a GPU whose UUID it cannot read")
	}
	if ctl.FormatUUID([16]byte{}) != "" {
		t.Error("no UUID is not formatted as empty")
	}
}

// TestLaunchOnAnotherGPU: a block names its GPU; a launch on it is masked,
// one on another GPU (the current context's device) is refused as an
// unknown descriptor is, through the launch wrappers or not, or, allowed
// unpartitioned, runs unmasked and is counted in the block.
func TestLaunchOnAnotherGPU(t *testing.T) {
	mask := enableOnly(0, 1, 9)
	start := func(t *testing.T, gpu string, flags uint32) (*proc, *ctl.Handle) {
		p, h := startExec(t, t.TempDir(), ctl.Init{GPU: gpu, Mask: mask, Live: live, Flags: flags})
		p.ready(t)
		if got := h.Snapshot().GPU; got != gpu {
			t.Fatalf("snapshot's GPU %q, want %q", got, gpu)
		}
		return p, h
	}
	for _, via := range []string{"klaunch kernel", "launch 0x40"} {
		t.Run("refused, "+via, func(t *testing.T) {
			p, h := start(t, fakeGPU0, 0)
			if got := p.ask(t, via); got != maskLine(mask) {
				t.Fatalf("launch on the partition's GPU: %q, want %q", got, maskLine(mask))
			}
			if got := p.ask(t, "ctx 1"); got != "rc 0" {
				t.Fatalf("ctx 1: %q", got)
			}
			fmt.Fprintln(p.in, via)
			if code := p.wait(t); code != 86 {
				t.Fatalf("a launch on another GPU: exit %d, want 86; stderr: %s", code, p.stderr)
			}
			if !strings.Contains(p.stderr.String(), "launched on "+fakeGPU1+", but the partition is of "+fakeGPU0) {
				t.Errorf("stderr %q does not say which GPUs", p.stderr)
			}
			if s := h.Snapshot(); s.Launches != 1 || s.OtherLaunches != 1 || s.OtherGPU != fakeGPU1 {
				t.Errorf("block: %d launches, %d on %q; want 1, 1 on %s", s.Launches, s.OtherLaunches, s.OtherGPU, fakeGPU1)
			}
		})
	}
	t.Run("allowed unpartitioned", func(t *testing.T) {
		p, h := start(t, fakeGPU0, ctl.FlagAllowUnpartitioned)
		p.ask(t, "ctx 1")
		for _, via := range []string{"klaunch kernel", "klaunch ex ptds", "launch 0x40"} {
			if got := p.ask(t, via); got != unmasked {
				t.Errorf("%s on another GPU, allowed: %q, want no mask %q", via, got, unmasked)
			}
		}
		p.ask(t, "ctx 0")
		if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
			t.Errorf("back on the partition's GPU: %q, want %q", got, maskLine(mask))
		}
		s := h.Snapshot()
		if s.Launches != 4 || s.OtherLaunches != 3 || s.OtherGPU != fakeGPU1 || s.State != ctl.StateHooked {
			t.Errorf("block: %d launches, %d on %q, state %d; want 4, 3 on %s, hooked", s.Launches, s.OtherLaunches, s.OtherGPU, s.State, fakeGPU1)
		}
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, p.stderr)
		}
		if n := strings.Count(p.stderr.String(), "run on all its TPCs"); n != 1 {
			t.Errorf("said %d times that kernels run unmasked on another GPU, want once: %q", n, p.stderr)
		}
	})
	t.Run("no GPU named", func(t *testing.T) {
		p, h := start(t, "", 0)
		p.ask(t, "ctx 1")
		if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
			t.Errorf("a block that names no GPU: %q, want the mask on any GPU as before", got)
		}
		if got := p.ask(t, "lookups"); got != "lookups 0" {
			t.Errorf("a block that names no GPU asked the driver for UUIDs: %q", got)
		}
		if s := h.Snapshot(); s.OtherLaunches != 0 {
			t.Errorf("%d launches counted on another GPU", s.OtherLaunches)
		}
		p.wait(t)
	})
	t.Run("each context looked up once", func(t *testing.T) {
		p, _ := start(t, fakeGPU0, ctl.FlagAllowUnpartitioned)
		p.burst(t, 100)
		p.ask(t, "threads 50")
		p.ask(t, "ctx 1")
		p.burst(t, 100)
		p.ask(t, "ctx 0")
		p.burst(t, 100)
		if got := p.ask(t, "lookups"); got != "lookups 2" {
			t.Errorf("launches on two contexts from five threads: %q, want 2 (one a context)", got)
		}
		p.wait(t)
	})
	t.Run("a context's handle comes back on another GPU", func(t *testing.T) {
		p, _ := start(t, fakeGPU0, ctl.FlagAllowUnpartitioned)
		if got := p.ask(t, "ctxnew 1"); got != "ctx 2" {
			t.Fatalf("ctxnew 1: %q", got)
		}
		if got := p.ask(t, "klaunch kernel"); got != unmasked {
			t.Errorf("a context of GPU 1: %q, want no mask", got)
		}
		p.ask(t, "ctxdel")
		if got := p.ask(t, "ctxnew 0"); got != "ctx 2" {
			t.Fatalf("ctxnew 0: %q, want the handle back", got)
		}
		if got := p.ask(t, "klaunch kernel"); got != maskLine(mask) {
			t.Errorf("the same handle, now of the partition's GPU: %q, want %q", got, maskLine(mask))
		}
		p.wait(t)
	})
}
