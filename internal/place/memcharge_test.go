// Tests of memory limits at placement: a tenant's or claim's limit must
// fit its GPU's memory beside the others' charges.

package place

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

const gib = 1 << 30

// TestMemoryLimits: the limits of a GPU's tenants, processes and claims
// alike, must fit its memory (81079 MiB on the recorded H100), each
// counted with its context's reserve outside MPS; one that does not is
// refused, saying what is free and who holds the rest, and leaves no
// block, unless --share allows it; tenants without a limit count nothing.
func TestMemoryLimits(t *testing.T) {
	top, _ := topologyJSON(t)
	if top.MemoryBytes != 81079<<20 {
		t.Fatalf("the recorded H100 has %d bytes of memory, want 81079 MiB", top.MemoryBytes)
	}
	dir := t.TempDir()
	procs := sleepers(t, 5)
	pid := func(i int) int { return procs[i].Process.Pid }
	place := func(i int, n string, mem ctl.MemLimit, flags uint32, share bool) (*Placed, error) {
		p, err := Place(dir, top, Request{Spec: count(t, n), PID: pid(i), Flags: flags, Share: share,
			Policy: ctl.Policy{Mem: mem}, Comm: []string{"tenant", strconv.Itoa(i)}})
		if p != nil && p.Block != nil {
			p.Block.Close()
		}
		return p, err
	}
	// no limit: counts nothing, and a limit beside it is told of it
	if p, err := place(0, "4", ctl.MemLimit{}, 0, false); err != nil || p.Memory.Limit != 0 || p.Memory.Free != top.MemoryBytes {
		t.Fatalf("a tenant without a limit: %+v %v", p, err)
	}
	// a share under MPS: its limit, whole MiB, in its block
	p, err := place(1, "4", ctl.MemLimit{Percent: 50}, ctl.FlagMPS, false)
	if err != nil || p.Memory.Limit != 40539<<20 || p.Memory.Unlimited != 1 || p.Memory.Free != top.MemoryBytes {
		t.Fatalf("a tenant of half the memory: %+v %v", p, err)
	}
	if h, err := ctl.Open(dir, pid(1)); err != nil || h.Snapshot().Memory.Limit != 40539<<20 {
		t.Fatalf("its block: %v", err)
	} else {
		h.Close()
	}
	// outside MPS a tenant counts its context's reserve too: 40028 MiB
	// (+768 MiB) does not fit in the 40540 MiB left, under MPS it does
	_, err = place(2, "4", ctl.MemLimit{Bytes: 40028 << 20}, 0, false)
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "a limit of 39.1G asked for (39.8G with its context, outside MPS), 39.6G of the GPU's 79.2G are free") ||
		!strings.Contains(err.Error(), "tenant 1) holds 39.6G") || !strings.Contains(err.Error(), "add --share") {
		t.Errorf("a limit that does not fit with its context: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(pid(2)))); !os.IsNotExist(err) {
		t.Errorf("a refused placement left a block: %v", err)
	}
	if p, err := place(2, "4", ctl.MemLimit{Bytes: 40028 << 20}, ctl.FlagMPS, false); err != nil || p.Memory.Free != 40540<<20 {
		t.Fatalf("the same limit under MPS: %+v %v", p, err)
	}
	// the GPU is full: a further limit is refused, but for --share
	if _, err := place(3, "4", ctl.MemLimit{Bytes: gib}, ctl.FlagMPS, false); !errors.Is(err, ErrMemory) ||
		!strings.Contains(err.Error(), "1G asked for, 512M of the GPU's 79.2G are free") {
		t.Errorf("a limit beside a full GPU: %v", err)
	}
	if p, err := place(3, "4", ctl.MemLimit{Bytes: gib}, ctl.FlagMPS, true); err != nil || p.Memory.Over != 512<<20 {
		t.Errorf("an over-commitment shared: %+v %v", p, err)
	}
	// more than the GPU has: refused, --share or not
	if _, err := place(4, "4", ctl.MemLimit{Bytes: 80 * gib}, 0, true); err == nil || !strings.Contains(err.Error(), "more than the GPU's 79.2G") {
		t.Errorf("a limit over the GPU's memory: %v", err)
	}
	// a claim draws on the same account, and says so when it does not fit
	_, err = Place(dir, top, Request{Claim: &Claim{UID: "c", Name: "ns/c"}, Spec: count(t, "4"), Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: gib}}})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "outside Kubernetes") {
		t.Errorf("a claim beside a full GPU: %v", err)
	}
	holders, _ := Holders(dir, top)
	var sum uint64
	for _, h := range holders {
		sum += h.Charge()
	}
	if sum != top.MemoryBytes+512<<20 {
		t.Errorf("the holders count %d bytes, want the GPU's and the 512 MiB over-committed", sum)
	}
}

// TestClaimMemory: a claim's limit is in its reservation and counts for
// later placements of processes, and a process's for claims.
func TestClaimMemory(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	c, err := Place(dir, top, Request{Claim: &Claim{UID: "a", Name: "ns/a"}, Spec: count(t, "8"), Flags: ctl.FlagMPS,
		Policy: ctl.Policy{Class: ctl.ClassLS, Mem: ctl.MemLimit{Bytes: 60 * gib}}})
	if err != nil || c.Memory.Limit != 60*gib {
		t.Fatalf("claim: %+v %v", c, err)
	}
	claims, _, _ := ctl.Claims(dir)
	if len(claims) != 1 || claims[0].Root.Memory.Limit != 60*gib {
		t.Fatalf("the reservation: %+v", claims)
	}
	me := sleepers(t, 1)[0].Process.Pid
	_, err = Place(dir, top, Request{Spec: count(t, "8"), PID: me, Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: 20 * gib}}})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "claim ns/a holds 60G") {
		t.Errorf("a process beside a claim of 60G: %v", err)
	}
	p, err := Place(dir, top, Request{Spec: count(t, "8"), PID: me, Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: 18 * gib}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Block.Close()
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "b", Name: "ns/b"}, Spec: count(t, "8"),
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: gib}}}); !errors.Is(err, ErrMemory) {
		t.Errorf("a claim beside a claim and a process filling the GPU: %v", err)
	}
}
