// Tests of fence: the TPCs each node block's LS tenants keep off.

package place

import (
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
)

// TestFence: the node block names the TPCs of partitions outside tide,
// from whichever placement made the last change: a static tenant placed
// before the first LS one, a plain claim reserved after it, and neither
// once the tenant has ended and the claim is released.
func TestFence(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	static := sleepers(t, 1)[0]
	fixed := func() partition.Set {
		t.Helper()
		n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		return partition.FromEnable(top, n.Fixed())
	}
	st, err := Place(dir, top, Request{Spec: count(t, "10"), PID: static.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}}); err != nil {
		t.Fatal(err)
	}
	if got := fixed(); got.String() != st.Set.String() {
		t.Errorf("after the LS claim: fixed %s, want the static tenant's %s", got, st.Set)
	}
	plain, err := Place(dir, top, Request{Claim: &Claim{UID: "plain", Name: "ns/plain"}, Spec: count(t, "20")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "be", Name: "ns/be"}, Spec: count(t, "66"), Policy: ctl.Policy{Class: ctl.ClassBE}}); err != nil {
		t.Fatal(err)
	}
	if got, want := fixed(), st.Set.Union(plain.Set); got.String() != want.String() {
		t.Errorf("after a plain claim and a BE one: fixed %s, want %s", got, want)
	}
	static.Process.Kill()
	static.Wait()
	if _, err := Release(dir, "plain"); err != nil {
		t.Fatal(err)
	}
	if got := fixed(); len(got) != 0 {
		t.Errorf("with only LS and BE left: fixed %s", got)
	}
}
