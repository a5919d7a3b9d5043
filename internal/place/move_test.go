// Tests of Move: carve set's move of a running tenant.

package place

import (
	"errors"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
)

// TestMoveTenant: carve set moves a program and the child processes that
// copied its block, and may not move them onto another tenant's TPCs.
func TestMoveTenant(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	procs := sleepers(t, 3)
	root, child, other := procs[0].Process.Pid, procs[1].Process.Pid, procs[2].Process.Pid
	create := func(pid, tenant int, tpcs string) {
		s, _ := partition.ParseTPCs(tpcs)
		set, _ := s.Resolve(top, nil)
		m, _ := partition.Mask(top, set)
		h, err := ctl.Create(dir, ctl.Init{PID: pid, Tenant: tenant, Parts: []ctl.Part{{Mask: m, Live: top.Live()}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	create(root, root, "0-3")
	create(child, root, "0-3")
	create(other, other, "8-11")
	s, _ := partition.ParseTPCs("4-7")
	m, err := Move(dir, top, child, s, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.PIDs) != 2 || m.Before.String() != "0-3" || m.After.String() != "4-7" {
		t.Errorf("moved %+v", m)
	}
	holders, _ := Holders(dir, top)
	for _, h := range holders {
		want := map[int]string{root: "4-7", other: "8-11"}[h.Tenant]
		if h.TPCs.String() != want {
			t.Errorf("tenant %d holds %s, want %s", h.Tenant, h.TPCs, want)
		}
	}
	s, _ = partition.ParseTPCs("6-9")
	if _, err := Move(dir, top, root, s, false); !errors.Is(err, ErrOverlap) {
		t.Errorf("moved onto another tenant's TPCs: %v", err)
	}
	s, _ = partition.ParseCount("63") // its own 4 count as free to it
	if _, err := Move(dir, top, root, s, false); err == nil || !strings.Contains(err.Error(), "63 TPCs asked for, 62 of 66 are free") {
		t.Errorf("count larger than the free TPCs: %v", err)
	}
	if _, err := Move(dir, top, 999999999, s, false); err == nil {
		t.Error("moved a process without a block")
	}
}
