// Tests of SetMemory: changing a running tenant's memory limit.

package place

import (
	"errors"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestSetMemory: carve set --mem changes the limit of every process of a
// tenant; a raise must fit beside the other tenants' limits (or be
// shared), a lowering always may; under MPS a process keeps the limit the
// driver started it with, so no raise above it, nor its removal, is
// taken.
func TestSetMemory(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	procs := sleepers(t, 3)
	root, child, other := procs[0].Process.Pid, procs[1].Process.Pid, procs[2].Process.Pid
	for _, b := range []struct {
		pid, tenant int
		limit       uint64
		flags       uint32
	}{{root, root, 10 * gib, ctl.FlagMPS}, {child, root, 10 * gib, ctl.FlagMPS}, {other, other, 60 * gib, 0}} {
		h, err := ctl.Create(dir, ctl.Init{PID: b.pid, Tenant: b.tenant, Flags: b.flags, MemLimit: b.limit, Parts: []ctl.Part{{Mask: top.Live().Disable(), Live: top.Live(), Node: ctl.NodeName(top.UUID)}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	started := map[int]uint64{root: 16 * gib, child: 16 * gib}
	backstop := func(pid int) (uint64, bool, error) { b, ok := started[pid]; return b, ok, nil }
	limitOf := func(pid int) uint64 {
		h, err := ctl.Open(dir, pid)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		return h.Snapshot().Memory.Limit
	}
	c, err := SetMemory(dir, top, child, ctl.MemLimit{Bytes: 14 * gib}, false, backstop)
	if err != nil || c.Before != 10*gib || c.After != 14*gib || len(c.PIDs) != 2 || limitOf(root) != 14*gib || limitOf(child) != 14*gib {
		t.Fatalf("a raise that fits: %+v %v", c, err)
	}
	// 60G + 768M beside it leave 18.4G: 18G fits, no more
	if _, err := SetMemory(dir, top, root, ctl.MemLimit{Bytes: 19 * gib}, false, nil); !errors.Is(err, ErrMemory) ||
		!strings.Contains(err.Error(), "18.4G of the GPU's 79.2G are free") || limitOf(root) != 14*gib {
		t.Errorf("a raise beyond the GPU's memory: %v", err)
	}
	// under MPS: no raise above the 16G it started with, even shared
	if _, err := SetMemory(dir, top, root, ctl.MemLimit{Bytes: 17 * gib}, true, backstop); err == nil ||
		!strings.Contains(err.Error(), "started under MPS with a memory limit of 16G") || limitOf(root) != 14*gib {
		t.Errorf("a raise above the MPS limit: %v", err)
	}
	if _, err := SetMemory(dir, top, root, ctl.MemLimit{}, false, backstop); err == nil || !strings.Contains(err.Error(), "lowered, not raised") {
		t.Errorf("the limit of an MPS client taken off: %v", err)
	}
	if c, err := SetMemory(dir, top, root, ctl.MemLimit{Bytes: 16 * gib}, false, backstop); err != nil || c.After != 16*gib {
		t.Errorf("a raise up to the MPS limit: %+v %v", c, err)
	}
	if c, err := SetMemory(dir, top, root, ctl.MemLimit{Bytes: 2 * gib}, false, backstop); err != nil || limitOf(child) != 2*gib {
		t.Errorf("a lowering under MPS: %+v %v", c, err)
	}
	// outside MPS: a share of the GPU, over-committed with --share, then
	// a lowering that still over-commits it is taken; the limit may go
	if _, err := SetMemory(dir, top, other, ctl.MemLimit{Percent: 99}, false, backstop); !errors.Is(err, ErrMemory) {
		t.Errorf("99%% beside 2G: %v", err)
	}
	if c, err := SetMemory(dir, top, other, ctl.MemLimit{Percent: 99}, true, backstop); err != nil || c.Over == 0 {
		t.Errorf("99%% shared: %+v %v", c, err)
	}
	if c, err := SetMemory(dir, top, other, ctl.MemLimit{Percent: 98}, false, backstop); err != nil || c.Before != 80268<<20 {
		t.Errorf("a lowering of an over-committed limit: %+v %v", c, err)
	}
	if c, err := SetMemory(dir, top, other, ctl.MemLimit{}, false, backstop); err != nil || limitOf(other) != 0 {
		t.Errorf("a limit taken off outside MPS: %+v %v", c, err)
	}
	if _, err := SetMemory(dir, top, 999999999, ctl.MemLimit{Bytes: gib}, false, nil); err == nil {
		t.Error("set the limit of a process without a block")
	}
}
