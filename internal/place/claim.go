package place

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// Reservation is a partition to reserve for a Kubernetes claim (see
// ctl.Claim): it holds its TPCs until released, whatever runs in it.
type Reservation struct {
	UID   string
	Name  string // namespace/name, for people
	Spec  partition.Spec
	Flags uint32
	Class uint32
	Tide  ctl.Tide
}

// Reserved is a claim's partition.
type Reserved struct {
	Dir  string // the claim's directory
	Set  partition.Set
	Mask topo.Mask
	// Again: the claim was reserved before (by this call's earlier attempt,
	// or by a process since restarted); Set is what it got then.
	Again bool
}

// Reserve places r's partition on t around the live partitions and claims
// in dir and makes the claim's directory, all under dir's lock. A claim
// already reserved gets its partition back unchanged: reserving is
// idempotent. What an interrupted reservation left is cleared first.
func Reserve(dir string, t *topo.Topology, r Reservation) (*Reserved, error) {
	cd, err := ctl.ClaimDir(dir, r.UID)
	if err != nil {
		return nil, err
	}
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	claims, pending, err := ctl.Claims(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range pending {
		os.RemoveAll(p)
	}
	for _, c := range claims {
		if c.UID != r.UID {
			continue
		}
		if !OnGPU(c.Root, t) {
			return nil, fmt.Errorf("claim %s is reserved on another GPU", r.Name)
		}
		set := partition.FromMask(t, topo.Mask(c.Root.Mask))
		return &Reserved{Dir: cd, Set: set, Mask: topo.Mask(c.Root.Mask), Again: true}, nil
	}
	holders, err := Holders(dir, t)
	if err != nil {
		return nil, err
	}
	set, _, err := chooseFor(t, r.Spec, holders, 0, false, r.Class, true)
	if err != nil {
		return nil, err
	}
	mask, err := partition.Mask(t, set)
	if err != nil {
		return nil, err
	}
	if err := reserve(dir, cd, t, r, set, mask); err != nil {
		os.RemoveAll(cd)
		return nil, err
	}
	fence(dir)
	return &Reserved{Dir: cd, Set: set, Mask: mask}, nil
}

func reserve(dir, cd string, t *topo.Topology, r Reservation, set partition.Set, mask topo.Mask) error {
	if err := os.MkdirAll(cd, 0o755); err != nil {
		return fmt.Errorf("claim directory: %w", err)
	}
	// the claim's containers, under whatever user, make their blocks here
	if err := os.Chmod(cd, 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("claim directory: %w", err)
	}
	tide := r.Tide
	tide.Node = ctl.NodeName(t.UUID) // names the GPU; LS and BE tenants meet in its block
	if r.Class == ctl.ClassLS || r.Class == ctl.ClassBE {
		n, err := ctl.OpenNode(dir, tide.Node, t.Live())
		if err != nil {
			return err
		}
		n.Reclaim()
		n.Close()
		node := filepath.Join(dir, tide.Node)
		if err := os.Chmod(node, 0o666); err != nil { // LS tenants of any user take slots
			return fmt.Errorf("node block: %w", err)
		}
		if err := os.Link(node, filepath.Join(cd, tide.Node)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("node block in the claim's directory: %w", err)
		}
	}
	h, err := ctl.CreateClaimRoot(cd, ctl.Init{GPU: t.UUID, Mask: mask, Live: t.Live(), SMs: SMs(t, set),
		Flags: r.Flags, Class: r.Class, Tide: tide, Comm: []string{"claim", r.Name}})
	if err != nil {
		return err
	}
	return h.Close()
}

// Release removes claim uid's reservation from dir, with its directory.
// Releasing a claim that is not reserved is no error; it says whether one
// was.
func Release(dir, uid string) (bool, error) {
	cd, err := ctl.ClaimDir(dir, uid)
	if err != nil {
		return false, err
	}
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return false, err
	}
	defer unlock()
	_, err = os.Stat(cd)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := os.RemoveAll(cd); err != nil {
		return true, fmt.Errorf("releasing claim %s: %w", uid, err)
	}
	fence(dir)
	return true, nil
}
