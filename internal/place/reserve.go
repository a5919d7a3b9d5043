// Reserving a partition for a Kubernetes claim: the claim's directory
// with its root and links to its GPUs' node blocks, then carve's record of
// it, reserving it again, which gives back what it holds, and releasing
// it.

package place

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
)

// Claim names the Kubernetes claim a partition is reserved for.
type Claim struct {
	UID  string
	Name string // namespace/name, for people
}

// again clears what interrupted reservations left in l and, if c is
// reserved there already (on the GPUs gpus, in its directory cd), is its
// partitions, as carve recorded them; its directory, if it is gone, its
// node blocks' links, and a root its pod removed or spoiled are made anew
// from the record.
func (c *Claim) again(dir, cd string, gpus []On, l *listing) (*Placed, error) {
	for _, p := range l.pending {
		os.RemoveAll(p)
	}
	l.pending = nil
	for _, have := range l.claims {
		if have.UID != c.UID {
			continue
		}
		if n := len(have.Root.Parts()); n != len(gpus) {
			return nil, fmt.Errorf("claim %s is reserved on %d GPUs, not %d", c.Name, n, len(gpus))
		}
		if err := claimDir(dir, cd, c.UID, ctl.Init{Class: have.Root.Class, Parts: have.Root.Parts()}); err != nil {
			return nil, err
		}
		if _, err := ctl.RepairClaimRoot(dir, have); err != nil {
			return nil, err
		}
		p := &Placed{Dir: cd, Again: true}
		for i, g := range gpus {
			part, ok := PartOn(have.Root, g.Topo)
			if !ok {
				return nil, fmt.Errorf("claim %s is reserved on other GPUs than %s", c.Name, g.name())
			}
			set := partition.FromMask(g.Topo, part.Mask)
			if i == 0 {
				p.Set, p.Mask = set, part.Mask
			} else {
				p.More = append(p.More, PlacedOn{GPU: g.Topo.UUID, Set: set, Mask: part.Mask})
			}
		}
		return p, nil
	}
	return nil, nil
}

// reserve makes c's directory cd in the runtime directory dir with its
// root, a copy of its reservation, in, for its pod, and a link to each of
// its GPUs' node blocks for an LS or BE claim, then carve's record of the
// reservation (ctl.RecordClaim), and returns the reservation; on an error
// it leaves nothing.
func (c *Claim) reserve(dir, cd string, in ctl.Init) (ctl.Snapshot, error) {
	in.Comm = []string{"claim", c.Name}
	root, err := reserveIn(dir, cd, c.UID, in)
	if err == nil {
		err = ctl.RecordClaim(dir, c.UID, in)
	}
	if err != nil {
		ctl.ForgetClaim(dir, c.UID)
		os.RemoveAll(cd)
	}
	return root, err
}

func reserveIn(dir, cd, uid string, in ctl.Init) (ctl.Snapshot, error) {
	if err := claimDir(dir, cd, uid, in); err != nil {
		return ctl.Snapshot{}, err
	}
	h, err := ctl.CreateClaimRoot(cd, in)
	if err != nil {
		return ctl.Snapshot{}, err
	}
	defer h.Close()
	return h.Snapshot(), nil
}

// claimDir makes the directory cd of claim uid reserved as in says, if
// there is none, with a link to each of its GPUs' node blocks for an LS
// or BE claim (made where there is none), the mount point of the GPU's
// directory and, for a BE claim, its own BE file there, linked
// (ctl.MakeBE); a link there already is kept. An LS claim's LS file is
// linked when it is seated (fence).
func claimDir(dir, cd, uid string, in ctl.Init) error {
	if err := os.MkdirAll(cd, 0o755); err != nil {
		return fmt.Errorf("claim directory: %w", err)
	}
	// the claim's containers, under whatever user, make their blocks here
	if err := os.Chmod(cd, 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("claim directory: %w", err)
	}
	if err := openNode(dir, in); err != nil {
		return err
	}
	for _, p := range nodes(in) {
		if in.Class != ctl.ClassLS && in.Class != ctl.ClassBE {
			break
		}
		node := filepath.Join(dir, p.Node)
		if err := ctl.ShareNode(node); err != nil { // its pod reads the block, which carve alone writes
			return err
		}
		if err := os.Link(node, filepath.Join(cd, p.Node)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("node block in the claim's directory: %w", err)
		}
		// where the GPU's directory is mounted, read-only (carve-dra's CDI
		// spec): root's, so that the pod can neither remove nor replace it
		if err := os.Mkdir(filepath.Join(cd, p.Node+ctl.NodeDirSuffix), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("node block in the claim's directory: %w", err)
		}
		if in.Class == ctl.ClassBE { // the claim's BE file, which its shims stamp; an LS claim's LS file is linked by its seat
			if err := ctl.MakeBE(dir, ctl.BE{Node: p.Node, Claim: uid, Dir: cd}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Release removes claim uid's reservation from dir: carve's record of it,
// its copy published in the node directory (openView), then its
// directory. Releasing a claim that is not reserved is no error;
// it says whether one was.
func Release(dir, uid string) (bool, error) {
	cd, err := ctl.ClaimDir(dir, uid)
	if err != nil {
		return false, err
	}
	unlock, err := lock(dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	had, err := ctl.ForgetClaim(dir, uid)
	if err != nil {
		return true, fmt.Errorf("releasing claim %s: %w", uid, err)
	}
	v := openView(dir) // its TPCs free for the node directory's tenants
	defer v.unlock()
	v.publish(dir)
	_, err = os.Stat(cd)
	if errors.Is(err, os.ErrNotExist) {
		return had, nil
	}
	if err := os.RemoveAll(cd); err != nil {
		return true, fmt.Errorf("releasing claim %s: %w", uid, err)
	}
	l, err := list(dir)
	if err == nil {
		l.others = v.tenants()
		fence(dir, l)
	}
	return true, nil
}
