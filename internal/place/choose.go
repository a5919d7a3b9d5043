// Resolving a spec on one GPU around its holders: the TPCs chosen and the
// partitions they overlap (refused unless shared), a BE tenant's floor,
// and the SMs of a set of TPCs.

package place

import (
	"errors"
	"fmt"
	"strings"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// Overlap is a live partition that shares TPCs with a placement.
type Overlap struct {
	Holder
	Common partition.Set
}

func (o Overlap) String() string {
	if o.Class == ctl.ClassBE {
		return fmt.Sprintf("TPCs %s are the BE floor of %s", o.Common, o.Holder)
	}
	return fmt.Sprintf("TPCs %s are also in the partition of %s", o.Common, o.Holder)
}

// ErrOverlap is wrapped by the errors of placements refused for overlap.
var ErrOverlap = errors.New("partitions would overlap")

// choose resolves r's spec on t around the holders other than r's tenant
// (none for a claim) and returns the set and the partitions it shares TPCs
// with. Without r.Share, any overlap is an error. A best-effort tenant
// yields its TPCs to the others of its side (tide), so it overlaps no one
// and no one there overlaps it but its floor (held).
func choose(t *topo.Topology, r Request, holders []Holder) (partition.Set, []Overlap, error) {
	others := held(holders, r.PID)
	var busy partition.Set
	for _, h := range others {
		busy = busy.Union(h.TPCs)
	}
	share := r.Share || r.Policy.Class == ctl.ClassBE
	set, err := r.Spec.Resolve(t, busy)
	if err == nil && share {
		set, err = offOutside(r, set, others)
	}
	if err != nil {
		return nil, nil, err
	}
	var overlaps []Overlap
	for _, h := range others {
		if c := set.Intersect(h.TPCs); len(c) > 0 {
			overlaps = append(overlaps, Overlap{Holder: h, Common: c})
		}
	}
	if len(overlaps) == 0 || share {
		return set, overlaps, nil
	}
	free := len(t.TPCs) - len(busy)
	var held []string
	for _, h := range others {
		held = append(held, fmt.Sprintf("%s holds %s", h, h.TPCs))
	}
	if r.Spec.Kind == partition.Count {
		return nil, nil, fmt.Errorf("%w: %d TPCs asked for, %d of %d are free (%s); %s",
			ErrOverlap, len(set), free, len(t.TPCs), strings.Join(held, "; "), r.advice())
	}
	var what []string
	for _, o := range overlaps {
		what = append(what, o.String())
	}
	return nil, nil, fmt.Errorf("%w: %s; name free TPCs (%d are free), or add --share to time-share these",
		ErrOverlap, strings.Join(what, "; "), free)
}

// offOutside is set, a partition that may share TPCs (--share, or a BE
// one), kept off the TPCs the holders Outside hold: no tide reaches
// between carve-dra's claims and the node directory's tenants, so a BE
// tenant on one side would not yield to the other's, and a claim's TPCs
// are its own. A BE partition of every TPC loses those; any other that
// meets them is refused, --share or not.
func offOutside(r Request, set partition.Set, holders []Holder) (partition.Set, error) {
	var out partition.Set
	var who []string
	for _, h := range holders {
		if h.Outside && len(set.Intersect(h.TPCs)) > 0 {
			out = out.Union(h.TPCs)
			who = append(who, fmt.Sprintf("%s holds %s", h, h.TPCs))
		}
	}
	if len(out) == 0 {
		return set, nil
	}
	var rest partition.Set
	for _, i := range set {
		if !out.Contains(i) {
			rest = append(rest, i)
		}
	}
	if r.Spec.Kind == partition.All && len(rest) > 0 {
		return rest, nil
	}
	return nil, fmt.Errorf("%w: %s, and no partition shares TPCs between carve-dra's claims and the node directory's tenants (tide does not reach between them): name free TPCs",
		ErrOverlap, strings.Join(who, "; "))
}

// held is the holders other than tenant (claims aside), each with the
// TPCs it holds against other placements: a BE tenant of this side only
// its floor, as it yields the rest to this side's LS tenants; one Outside
// all of its TPCs, as it yields to none here (offOutside). Those that hold
// none are left out.
func held(holders []Holder, tenant int) []Holder {
	var out []Holder
	for _, h := range holders {
		if h.Claim == "" && h.Tenant == tenant && !h.Outside {
			continue
		}
		if h.Class == ctl.ClassBE && !h.Outside {
			h.TPCs = h.Floor
		}
		if len(h.TPCs) > 0 {
			out = append(out, h)
		}
	}
	return out
}

// chooseFloor picks a BE tenant's floor: n TPCs of its partition set that
// no other partition holds (LS, plain, or another BE's floor), GPC-packed,
// at least ctl.NarrowMin of them (as ctl.Policy.Normalize checks).
func chooseFloor(t *topo.Topology, n int, set partition.Set, holders []Holder, tenant int) (topo.Enable, error) {
	var busy partition.Set
	for i := range t.TPCs {
		if !set.Contains(i) {
			busy = append(busy, i)
		}
	}
	for _, h := range held(holders, tenant) {
		busy = busy.Union(h.TPCs)
	}
	if free := len(t.TPCs) - len(busy); n > free {
		return topo.Enable{}, fmt.Errorf("%w: a BE floor of %d TPCs asked for, %d of the partition's %d are free of other partitions and BE floors",
			ErrOverlap, n, free, len(set))
	}
	return partition.Enable(t, partition.Pack(t, n, busy))
}

// SMs is the number of SMs of set on t.
func SMs(t *topo.Topology, set partition.Set) int {
	n := 0
	for _, i := range set {
		n += len(t.TPCs[i].SMs)
	}
	return n
}
