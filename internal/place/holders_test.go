// Tests of what a placement reads of the runtime directory, and how often.

package place

import (
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
)

// TestOneReadPerPlacement: each placement, move, release and fence lists
// the runtime directory's blocks and its claims once.
func TestOneReadPerPlacement(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	var blocks, claims int
	listBlocks = func(dir string) ([]ctl.Entry, error) { blocks++; return ctl.List(dir) }
	listClaims = func(dir string) ([]ctl.Claim, []string, error) { claims++; return ctl.Claims(dir) }
	t.Cleanup(func() { listBlocks, listClaims = ctl.List, ctl.Claims })
	reads := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if blocks != 1 || claims != 1 {
			t.Errorf("%s listed the blocks %d times and the claims %d times, want once each", what, blocks, claims)
		}
		blocks, claims = 0, 0
	}
	procs := sleepers(t, 2)
	_, err := Place(dir, top, Request{Spec: count(t, "16"), PID: procs[0].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	reads("placing an LS tenant", err)
	all, _ := DefaultSpec(ctl.Policy{Class: ctl.ClassBE})
	_, err = Place(dir, top, Request{Spec: all, PID: procs[1].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassBE, Floor: 8}})
	reads("placing a BE tenant with a floor", err)
	_, err = Place(dir, top, Request{Claim: &Claim{UID: "c", Name: "ns/c"}, Spec: count(t, "8"), Policy: ctl.Policy{Class: ctl.ClassBE, Floor: 8}})
	reads("reserving a claim", err)
	_, err = Place(dir, top, Request{Claim: &Claim{UID: "c", Name: "ns/c"}, Spec: count(t, "8")})
	reads("reserving it again", err)
	s, _ := partition.ParseTPCs("60-65")
	_, err = Move(dir, top, procs[0].Process.Pid, s, false)
	reads("moving a tenant", err)
	_, err = Release(dir, "c")
	reads("releasing a claim", err)
	reads("fencing", Fence(dir))
}

// TestHolderNameEscaped: a holder's name, which carve run's notes print,
// shows its command line escaped.
func TestHolderNameEscaped(t *testing.T) {
	h := Holder{Tenant: 7, Command: []string{"sh", "-c", "\x1b[2J"}}
	if got, want := h.String(), `pid 7 (sh -c \x1b[2J)`; got != want {
		t.Errorf("holder %q, want %q", got, want)
	}
}
