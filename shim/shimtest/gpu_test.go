// Which of the tenant's GPUs a launch is on (shim/gpu.c): each launch is
// masked with the partition of its context's GPU, found by UUID among the
// block's, one on a GPU the block does not name is refused, and the
// launch callback asks the driver nothing to find it.

package shimtest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// The fake driver's two GPUs (shim/fake/gpus.c); the first is that of
// the topology in internal/topo/testdata.
const (
	fakeGPU0 = "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17ef"
	fakeGPU1 = "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"
)

// unmasked is what a launch the shim wrote no mask into shows.
const unmasked = "mask 00000000 00000000 00000000 00000000 0 1"

// TestLaunchOnAnotherGPU: a block names its GPU; a launch on it is masked,
// one on another GPU (the current context's device) is refused as an
// unknown descriptor is, through the launch wrappers or not, or, allowed
// unpartitioned, runs unmasked and is counted in the block.
func TestLaunchOnAnotherGPU(t *testing.T) {
	mask := enableOnly(0, 1, 9)
	start := func(t *testing.T, gpu string, flags uint32) (*proc, *ctl.Handle) {
		p, h := startExec(t, t.TempDir(), ctl.Init{Flags: flags, Parts: []ctl.Part{{GPU: gpu, Mask: mask, Live: live}}})
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

// live1 is the second fake GPU's live TPCs: the first's with bits 9-12
// dead and 17-20 live, as two GPUs of one model differ by floorsweeping.
var live1 = [4]uint32{0x001e000f | 0x1e000, 0, 0, 0}

// twoGPUs is a partition on both fake GPUs: TPC bits 0-1 of GPU 0 (4 SMs),
// 17-19 of GPU 1 (6 SMs), whose bits 9-12 are dead there.
func twoGPUs(flags uint32) ctl.Init {
	return ctl.Init{Flags: flags, Parts: []ctl.Part{{GPU: fakeGPU0, Mask: enableOnly(0, 1), Live: live, SMs: 4}, {GPU: fakeGPU1, Mask: enableOnly(17, 18, 19), Live: live1, SMs: 6}}}
}

// TestPartitionPerGPU: a tenant with a partition on each of two GPUs has
// each launch masked with the partition of the GPU its context is on,
// told each device's SM count, and keeps each mask when the other moves;
// a mask of dead TPCs of its own GPU is refused there alone.
func TestPartitionPerGPU(t *testing.T) {
	p, h := startExec(t, t.TempDir(), twoGPUs(0))
	p.ready(t)
	on0, on1 := maskLine(enableOnly(0, 1)), maskLine(enableOnly(17, 18, 19))
	if got := p.ask(t, "klaunch kernel"); got != on0 {
		t.Errorf("a launch on GPU 0: %q, want %q", got, on0)
	}
	p.ask(t, "ctx 1")
	for _, via := range []string{"klaunch kernel", "klaunch ex ptds", "launch 0x40"} {
		if got := p.ask(t, via); got != on1 {
			t.Errorf("%s on GPU 1: %q, want its own partition %q", via, got, on1)
		}
	}
	for dev, want := range []string{"sms 4 rc 0", "sms 6 rc 0"} {
		if got := p.ask(t, fmt.Sprintf("sms %d", dev)); got != want {
			t.Errorf("SM count of device %d: %q, want %q", dev, got, want)
		}
	}
	// GPU 1's partition moves; GPU 0's stays
	if _, err := h.SetPartMask(fakeGPU1, enableOnly(20), 2); err != nil {
		t.Fatal(err)
	}
	if got := p.ask(t, "klaunch kernel"); got != maskLine(enableOnly(20)) {
		t.Errorf("GPU 1 after its move: %q", got)
	}
	p.ask(t, "ctx 0")
	if got := p.ask(t, "klaunch kernel"); got != on0 {
		t.Errorf("GPU 0 after GPU 1's move: %q, want %q", got, on0)
	}
	// TPC bit 9 is live on GPU 0, dead on GPU 1: refused there only
	if _, err := h.SetPartMask(fakeGPU1, enableOnly(9), 2); err != nil {
		t.Fatal(err)
	}
	if got := p.ask(t, "klaunch kernel"); got != on0 {
		t.Errorf("GPU 0 after GPU 1 got a dead mask: %q, want %q", got, on0)
	}
	p.ask(t, "ctx 1")
	if got := p.ask(t, "klaunch kernel"); got != maskLine(enableOnly(20)) {
		t.Errorf("GPU 1 with a mask of its dead TPCs: %q, want the previous %q", got, maskLine(enableOnly(20)))
	}
	s := h.Snapshot()
	if s.Refused != 1 || s.OtherLaunches != 0 || len(s.More) != 1 || s.More[0].Mask != enableOnly(9) || s.More[0].SMs != 2 {
		t.Errorf("block: refused %d, %d launches elsewhere, more %+v", s.Refused, s.OtherLaunches, s.More)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, p.stderr)
	}
}

// TestPartitionPerGPUReordered: a program that sees the GPUs in another
// order (CUDA_VISIBLE_DEVICES) finds each partition by its GPU's UUID:
// its device 0 is GPU 1, and gets GPU 1's mask and SM count.
func TestPartitionPerGPUReordered(t *testing.T) {
	p, _ := startExec(t, t.TempDir(), twoGPUs(0), "CUDA_VISIBLE_DEVICES=1,0")
	p.ready(t)
	if got, want := p.ask(t, "klaunch kernel"), maskLine(enableOnly(17, 18, 19)); got != want {
		t.Errorf("a launch on device 0, GPU 1: %q, want %q", got, want)
	}
	p.ask(t, "ctx 1")
	if got, want := p.ask(t, "klaunch kernel"), maskLine(enableOnly(0, 1)); got != want {
		t.Errorf("a launch on device 1, GPU 0: %q, want %q", got, want)
	}
	for dev, want := range []string{"sms 6 rc 0", "sms 4 rc 0"} {
		if got := p.ask(t, fmt.Sprintf("sms %d", dev)); got != want {
			t.Errorf("SM count of device %d: %q, want %q", dev, got, want)
		}
	}
	p.wait(t)
}

// TestPartitionOnOneOfTwoGPUs: a tenant with a partition on GPU 1 alone,
// whose program sees both: a launch on GPU 0 is refused, and the program
// is told GPU 0's whole SM count.
func TestPartitionOnOneOfTwoGPUs(t *testing.T) {
	in := ctl.Init{Parts: []ctl.Part{{GPU: fakeGPU1, Mask: enableOnly(17, 18), Live: live1, SMs: 4}}}
	p, _ := startExec(t, t.TempDir(), in)
	p.ready(t)
	if got := p.ask(t, "sms 0"); got != "sms 132 rc 0" {
		t.Errorf("SM count of GPU 0, no partition there: %q, want the whole GPU's", got)
	}
	if got := p.ask(t, "sms 1"); got != "sms 4 rc 0" {
		t.Errorf("SM count of GPU 1: %q", got)
	}
	fmt.Fprintln(p.in, "klaunch kernel")
	if code := p.wait(t); code != 86 {
		t.Fatalf("a launch on GPU 0: exit %d, want 86; stderr: %s", code, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "launched on "+fakeGPU0+", but the partition is of "+fakeGPU1) {
		t.Errorf("stderr %q does not say which GPUs", p.stderr)
	}
}

// TestChildInheritsEveryGPU: a child process's block holds its parent's
// partition on each GPU, and masks its launches on each.
func TestChildInheritsEveryGPU(t *testing.T) {
	dir := t.TempDir()
	p, h := startExec(t, dir, twoGPUs(0))
	p.ready(t)
	want0, want1 := maskLine(enableOnly(0, 1)), maskLine(enableOnly(17, 18, 19))
	got := p.ask(t, "spawn klaunch kernel;ctx 1;klaunch kernel;sms 1")
	if !strings.HasSuffix(got, " 0 ready|"+want0+"|rc 0|"+want1+"|sms 6 rc 0") {
		t.Errorf("a child launching on both GPUs: %q, want %q then %q", got, want0, want1)
	}
	entries, err := ctl.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.PID == h.Snapshot().PID {
			continue
		}
		t.Errorf("the child's block is listed after it ended: %+v", e)
	}
	p.wait(t)
}

// TestCallbackAsksTheDriverNothing: the launch callback calls no driver
// function (a call nested in the launch cost CUPTI its kernel records):
// the wrapper found the launch's GPU before the driver's call, and a launch
// no wrapper saw is found by its context among those seen before; only a
// new context is looked up there.
func TestCallbackAsksTheDriverNothing(t *testing.T) {
	p, _ := startExec(t, t.TempDir(), twoGPUs(0))
	p.ready(t)
	if got := p.ask(t, "profiler"); got != "rc 0" {
		t.Fatalf("the profiler's subscription: %q", got)
	}
	on := []string{maskLine(enableOnly(0, 1)), maskLine(enableOnly(17, 18, 19))}
	for ctx := range on {
		p.ask(t, fmt.Sprintf("ctx %d", ctx))
		for _, via := range []string{"klaunch kernel", "klaunch kernel ptds", "klaunch ex", "klaunch coop", "klaunch graph"} {
			if got := p.ask(t, via); got != on[ctx] {
				t.Errorf("%s on GPU %d: %q, want %q", via, ctx, got, on[ctx])
			}
		}
	}
	if got := p.ask(t, "incb"); got != "incb 0" {
		t.Errorf("driver calls from inside the launch callbacks: %q, want none", got)
	}
	// launches no wrapper saw: found by the context the callback's params
	// name, asking the driver only of a context never seen before
	if got := p.ask(t, "launch 0x40"); got != on[1] {
		t.Errorf("a launch no wrapper saw, on GPU 1: %q, want %q", got, on[1])
	}
	if got := p.ask(t, "incb"); got != "incb 0" {
		t.Errorf("a launch no wrapper saw, on a context seen before: %q, want no driver call", got)
	}
	if got := p.ask(t, "ctxnew 0"); !strings.HasPrefix(got, "ctx ") {
		t.Fatalf("ctxnew 0: %q", got)
	}
	if got := p.ask(t, "launch 0x40"); got != on[0] {
		t.Errorf("a launch no wrapper saw, on a new context of GPU 0: %q, want %q", got, on[0])
	}
	asked := p.ask(t, "incb")
	if asked == "incb 0" {
		t.Errorf("a new context's launch no wrapper saw was not looked up: %q", asked)
	}
	if got := p.ask(t, "launch 0x40"); got != on[0] || p.ask(t, "incb") != asked {
		t.Errorf("the new context again: %q, driver calls %q, want %q and still %q", got, p.ask(t, "incb"), on[0], asked)
	}
	p.wait(t)
}
