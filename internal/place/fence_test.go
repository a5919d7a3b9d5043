// Tests of fence: the TPCs each node block's LS tenants keep off.

package place

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// TestFence: the node block names the TPCs of partitions outside tide,
// from whichever placement made the last change: a static tenant placed
// before the first LS one, a plain claim reserved after it, and neither
// once the tenant has ended and the claim is released.
func TestFence(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	static := sleepers(t, 1)[0]
	st, err := Place(dir, top, Request{Spec: count(t, "10"), PID: static.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}}); err != nil {
		t.Fatal(err)
	}
	if got := fixedOf(t, dir, top); got.String() != st.Set.String() {
		t.Errorf("after the LS claim: fixed %s, want the static tenant's %s", got, st.Set)
	}
	plain, err := Place(dir, top, Request{Claim: &Claim{UID: "plain", Name: "ns/plain"}, Spec: count(t, "20")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "be", Name: "ns/be"}, Spec: count(t, "66"), Policy: ctl.Policy{Class: ctl.ClassBE}}); err != nil {
		t.Fatal(err)
	}
	if got, want := fixedOf(t, dir, top), st.Set.Union(plain.Set); got.String() != want.String() {
		t.Errorf("after a plain claim and a BE one: fixed %s, want %s", got, want)
	}
	static.Process.Kill()
	static.Wait()
	if _, err := Release(dir, "plain"); err != nil {
		t.Fatal(err)
	}
	if got := fixedOf(t, dir, top); len(got) != 0 {
		t.Errorf("with only LS and BE left: fixed %s", got)
	}
}

// seatsOf are the node block's seats: each used slot's pid (a claim's: 0)
// and reserved TPCs, by slot.
func seatsOf(t *testing.T, dir string, top *topo.Topology) map[int]string {
	t.Helper()
	n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	b := nodeBlock(n)
	out := map[int]string{}
	for i := range b.Slots {
		if s := &b.Slots[i]; atomic.LoadUint32(&b.Used)&(1<<i) != 0 {
			out[i] = fmt.Sprintf("kind %d pid %d %s", s.Kind, s.PID, partition.FromEnable(top, s.Reserved))
		}
	}
	return out
}

// TestSeats: each LS tenant placed gets a seat in the node block, carve's,
// reserving its TPCs, and an LS file linked into its directory; a BE
// tenant gets none. A tenant of carve run that ended leaves its seat, LS
// file and link at the next placement or Fence (carve daemon's), a
// claim released at its release; the seats of the others are kept.
func TestSeats(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	procs := sleepers(t, 3)
	node := ctl.NodeName(top.UUID)
	ls, err := Place(dir, top, Request{Spec: count(t, "10"), PID: procs[0].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := Place(dir, top, Request{Claim: &Claim{UID: "ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(dir, top, Request{Spec: count(t, "8"), PID: procs[1].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassBE}}); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		0: fmt.Sprintf("kind %d pid %d %s", ctl.SeatTenant, procs[0].Process.Pid, ls.Set),
		1: fmt.Sprintf("kind %d pid 0 %s", ctl.SeatClaim, claim.Set),
	}
	if got := seatsOf(t, dir, top); !reflect.DeepEqual(got, want) {
		t.Fatalf("seats %v, want %v", got, want)
	}
	file := ctltest.LSFile(t, dir, node, 0)
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the LS tenant's LS file: %v %v", st, err)
	}
	// no link to it beside the node block, which another user of a node
	// directory could have made first: its shim finds its seat by its pid
	if _, err := os.Lstat(filepath.Join(dir, node+ctl.NodeLSLink+strconv.Itoa(procs[0].Process.Pid))); err == nil {
		t.Fatal("a link to the LS tenant's LS file beside the node block")
	}
	if _, err := os.Stat(filepath.Join(claim.Dir, ctl.LSLinkName(node))); err != nil {
		t.Fatalf("the LS claim's LS file: %v", err)
	}

	procs[0].Process.Kill()
	procs[0].Wait()
	if err := Fence(dir); err != nil {
		t.Fatal(err)
	}
	delete(want, 0)
	if got := seatsOf(t, dir, top); !reflect.DeepEqual(got, want) {
		t.Errorf("after the LS tenant ended: seats %v, want %v", got, want)
	}
	if _, err := os.Lstat(file); err == nil {
		t.Errorf("after the LS tenant ended: %s is still there", file)
	}
	// a new LS tenant takes the free slot, with a new LS file
	again, err := Place(dir, top, Request{Spec: count(t, "4"), PID: procs[2].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	want[0] = fmt.Sprintf("kind %d pid %d %s", ctl.SeatTenant, procs[2].Process.Pid, again.Set)
	if got := seatsOf(t, dir, top); !reflect.DeepEqual(got, want) {
		t.Errorf("after a new LS tenant: seats %v, want %v", got, want)
	}
	if _, err := Release(dir, "ls"); err != nil {
		t.Fatal(err)
	}
	delete(want, 1)
	if got := seatsOf(t, dir, top); !reflect.DeepEqual(got, want) {
		t.Errorf("after the claim's release: seats %v, want %v", got, want)
	}
}
