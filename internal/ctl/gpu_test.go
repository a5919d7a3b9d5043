// GPU UUIDs as blocks hold them (gpu.go), and a block's partitions on
// several GPUs (Create); with the test GPUs they name, the fake driver's.

package ctl_test

import (
	"fmt"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// The fake driver's two GPUs (shim/fake/gpus.c); the first is that of
// the topology in internal/topo/testdata.
const (
	fakeGPU0 = "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17ef"
	fakeGPU1 = "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"
)

// live has bits 0-3 and 9-16 live, like the start of the H100's bit space.
var live = [4]uint32{0x0001fe0f, 0, 0, 0}

// live1 is the second fake GPU's live TPCs: the first's with bits 9-12
// dead and 17-20 live, as two GPUs of one model differ by floorsweeping.
var live1 = [4]uint32{0x001e000f | 0x1e000, 0, 0, 0}

// enableOnly is the mask that enables the TPC bits given and no other.
func enableOnly(bits ...int) [4]uint32 {
	m := [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
	for _, b := range bits {
		m[b/32] &^= 1 << (b % 32)
	}
	return m
}

// TestUUIDRoundTrip: a GPU's or MIG instance's UUID reads into bytes and
// formats back; malformed ones are refused, by Create too.
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
	if _, err := ctl.Create(t.TempDir(), ctl.Init{PID: 1, Parts: []ctl.Part{{GPU: "GPU-0"}}}); err == nil {
		t.Error("Create took a block for a GPU whose UUID it cannot read")
	}
	if ctl.FormatUUID([16]byte{}) != "" {
		t.Error("no UUID is not formatted as empty")
	}
}

// TestBlockParts: a block of several GPUs names each, none twice, and no
// more than a block holds; what it holds reads back.
func TestBlockParts(t *testing.T) {
	dir := t.TempDir()
	h, err := ctl.Create(dir, ctl.Init{PID: 7, Parts: []ctl.Part{{GPU: fakeGPU0, Mask: enableOnly(0), Live: live, SMs: 2, Node: "node-a"}, {GPU: fakeGPU1, Node: "node-b", Mask: enableOnly(17), Live: live1, SMs: 2, Floor: [4]uint32{1 << 18}}}})
	if err != nil {
		t.Fatal(err)
	}
	parts := h.Snapshot().Parts()
	want := []ctl.Part{{GPU: fakeGPU0, Node: "node-a", Mask: enableOnly(0), Live: live, SMs: 2},
		{GPU: fakeGPU1, Node: "node-b", Mask: enableOnly(17), Live: live1, SMs: 2, Floor: [4]uint32{1 << 18}}}
	if fmt.Sprint(parts) != fmt.Sprint(want) {
		t.Errorf("parts %+v, want %+v", parts, want)
	}
	if g := h.Snapshot().GPUs(); len(g) != 2 || g[1] != fakeGPU1 {
		t.Errorf("GPUs %v", g)
	}
	h.Close()
	for name, in := range map[string]ctl.Init{
		"twice":         {PID: 8, Parts: []ctl.Part{{GPU: fakeGPU0}, {GPU: fakeGPU0}}},
		"first unnamed": {PID: 8, Parts: []ctl.Part{{}, {GPU: fakeGPU1}}},
		"too many":      {PID: 8, Parts: append([]ctl.Part{{GPU: fakeGPU0}}, make([]ctl.Part, ctl.GPUs)...)},
	} {
		if _, err := ctl.Create(dir, in); err == nil {
			t.Errorf("%s: created", name)
		}
	}
}
