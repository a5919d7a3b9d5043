// Tests of partitions on several GPUs: placed, reserved and moved on
// each, all of them or none.

package place

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

func tpcs(t *testing.T, s string) partition.Spec {
	t.Helper()
	spec, err := partition.ParseTPCs(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// enablesOnlyLive says whether mask enables live TPCs of top alone.
func enablesOnlyLive(top *topo.Topology, m topo.Disable) bool {
	return m.Enable().And(top.Live()) == m.Enable() && m.Enable().Count() > 0
}

// TestPlaceOnTwoGPUs: a tenant's partition on two GPUs whose live TPCs
// differ is one block holding a mask for each, made from each GPU's
// topology: the same logical TPCs are other mask bits on each, and each
// mask enables only TPCs live on its GPU.
func TestPlaceOnTwoGPUs(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	dir := t.TempDir()
	p, err := Place(dir, a, Request{Spec: tpcs(t, "0-15"), PID: os.Getpid(), More: []On{{Topo: b, Spec: tpcs(t, "0-15")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Block.Close()
	if len(p.More) != 1 || p.Set.String() != "0-15" || p.More[0].Set.String() != "0-15" || p.More[0].GPU != b.UUID {
		t.Fatalf("placed %+v", p)
	}
	s := p.Block.Snapshot()
	parts := s.Parts()
	if len(parts) != 2 || parts[0].GPU != a.UUID || parts[1].GPU != b.UUID || parts[1].Node != ctl.NodeName(b.UUID) {
		t.Fatalf("block's partitions %+v", parts)
	}
	if parts[0].Mask == parts[1].Mask {
		t.Errorf("TPCs 0-15 have one mask on both GPUs, %v: GPU 1's bit 10 is dead", parts[0].Mask)
	}
	for i, top := range []*topo.Topology{a, b} {
		if !enablesOnlyLive(top, parts[i].Mask) || parts[i].Live != top.Live() || parts[i].SMs != 32 {
			t.Errorf("GPU %d: mask %v, live %v, %d SMs: want 32 SMs of its own live TPCs", i, parts[i].Mask, parts[i].Live, parts[i].SMs)
		}
		if got := partition.FromMask(top, parts[i].Mask).String(); got != "0-15" {
			t.Errorf("GPU %d's mask is TPCs %s of its topology, want 0-15", i, got)
		}
	}
	for _, top := range []*topo.Topology{a, b} {
		hs, _ := Holders(dir, top)
		if len(hs) != 1 || hs[0].TPCs.String() != "0-15" {
			t.Errorf("holders of %s: %+v", top.UUID, hs)
		}
	}
}

// TestPlaceOnTwoGPUsAllOrNothing: each GPU's partition is chosen around
// that GPU's holders alone, and a request that does not fit on one of its
// GPUs places nothing on the others.
func TestPlaceOnTwoGPUsAllOrNothing(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	dir := t.TempDir()
	procs := sleepers(t, 3)
	first, err := Place(dir, a, Request{Spec: tpcs(t, "0-15"), PID: procs[0].Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	first.Block.Close()
	// TPCs 0-15 are free on GPU 1, held on GPU 0
	p, err := Place(dir, b, Request{Spec: tpcs(t, "0-15"), PID: procs[1].Process.Pid})
	if err != nil {
		t.Fatalf("TPCs 0-15 of the second GPU, held on the first only: %v", err)
	}
	p.Block.Close()
	_, err = Place(dir, b, Request{Spec: count(t, "40"), PID: procs[2].Process.Pid,
		More: []On{{Topo: a, Spec: count(t, "60"), Name: "GPU 0"}}})
	if !errors.Is(err, ErrOverlap) || !strings.HasPrefix(err.Error(), "GPU 0: ") {
		t.Fatalf("60 TPCs on GPU 0 with 50 free: %v, want an overlap naming GPU 0", err)
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(procs[2].Process.Pid))); !os.IsNotExist(err) {
		t.Errorf("a refused placement left a block: %v", err)
	}
	hs, _ := Holders(dir, b)
	if len(hs) != 1 {
		t.Errorf("GPU 1 after a refused placement of two GPUs: %+v, want its one tenant", hs)
	}
	if _, err := Place(dir, a, Request{Spec: count(t, "4"), PID: procs[2].Process.Pid, More: []On{{Topo: a, Spec: count(t, "4")}}}); err == nil ||
		!strings.Contains(err.Error(), "named twice") {
		t.Errorf("a GPU named twice: %v", err)
	}
}

// TestPlaceOnTwoGPUsMemory: a tenant's memory limit on several GPUs is
// counted on each (it may hold all of it on any one of them).
func TestPlaceOnTwoGPUsMemory(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	dir := t.TempDir()
	procs := sleepers(t, 2)
	p, err := Place(dir, a, Request{Spec: count(t, "8"), PID: procs[0].Process.Pid, Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: 50 << 30}},
		More: []On{{Topo: b, Spec: count(t, "8")}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Block.Close()
	if p.Memory.Limit != 50<<30 || p.More[0].Memory.Limit != 50<<30 {
		t.Errorf("memory %+v, on GPU 1 %+v", p.Memory, p.More[0].Memory)
	}
	_, err = Place(dir, b, Request{Spec: count(t, "8"), PID: procs[1].Process.Pid, Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: 40 << 30}}})
	if !errors.Is(err, ErrMemory) {
		t.Errorf("40G on the second GPU beside a tenant of 50G on both: %v, want refused", err)
	}
}

// TestClaimOnTwoGPUs: a claim of two GPUs is one reservation with a
// partition on each, linked to each GPU's node block for an LS claim,
// fenced on each; reserving it again gives the same partitions.
func TestClaimOnTwoGPUs(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	dir := t.TempDir()
	r := Request{Claim: &Claim{UID: "c2", Name: "ns/two"}, Spec: count(t, "10"), Policy: ctl.Policy{Class: ctl.ClassLS},
		More: []On{{Topo: b, Spec: count(t, "20")}}}
	p, err := Place(dir, a, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Set) != 10 || len(p.More) != 1 || len(p.More[0].Set) != 20 {
		t.Fatalf("placed %+v", p)
	}
	for _, top := range []*topo.Topology{a, b} {
		if _, err := os.Stat(filepath.Join(p.Dir, ctl.NodeName(top.UUID))); err != nil {
			t.Errorf("the claim's directory has no link to %s's node block: %v", top.UUID, err)
		}
	}
	again, err := Place(dir, a, r)
	if err != nil || !again.Again || again.Set.String() != p.Set.String() || len(again.More) != 1 || again.More[0].Set.String() != p.More[0].Set.String() {
		t.Errorf("reserved again: %+v %v, want %+v", again, err, p)
	}
	if _, err := Place(dir, a, Request{Claim: r.Claim, Spec: count(t, "10")}); err == nil {
		t.Error("the claim reserved on two GPUs was taken again for one")
	}
	// a plain claim on GPU 1 alone: fenced in GPU 1's node only
	if _, err := Place(dir, b, Request{Claim: &Claim{UID: "plain", Name: "ns/plain"}, Spec: count(t, "6")}); err != nil {
		t.Fatal(err)
	}
	for i, top := range []*topo.Topology{a, b} {
		n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n.Fixed().Count(), []int{0, 6}[i]; got != want {
			t.Errorf("GPU %d's node keeps LS tenants off %d TPCs, want %d", i, got, want)
		}
		n.Close()
	}
}

// TestMoveOnOneOfTwoGPUs: moving a tenant of two GPUs on one of them
// leaves its partition on the other.
func TestMoveOnOneOfTwoGPUs(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	dir := t.TempDir()
	pid := sleepers(t, 1)[0].Process.Pid
	p, err := Place(dir, a, Request{Spec: tpcs(t, "0-3"), PID: pid, More: []On{{Topo: b, Spec: tpcs(t, "0-3")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Block.Close()
	m, err := Move(dir, b, pid, tpcs(t, "8-11"), false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Before.String() != "0-3" || m.After.String() != "8-11" {
		t.Errorf("moved %+v", m)
	}
	for i, top := range []*topo.Topology{a, b} {
		hs, _ := Holders(dir, top)
		if want := []string{"0-3", "8-11"}[i]; len(hs) != 1 || hs[0].TPCs.String() != want {
			t.Errorf("GPU %d: holders %+v, want TPCs %s", i, hs, want)
		}
	}
	if s := p.Block.Snapshot(); s.More[0].SMs != 8 || !enablesOnlyLive(b, s.More[0].Mask) {
		t.Errorf("GPU 1's partition after the move: %+v", s.More[0])
	}
}
