// Fences: the TPCs each node block's LS tenants keep off, those of
// partitions outside tide and BE tenants' floors, and the LS tenants'
// seats (ctl.Seats), brought up to date after every change.

package place

import (
	"errors"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
)

// Fence brings the node blocks' fixed TPCs and seats up to date (see
// fence) under dir's lock: a partition that ended since the last placement
// no longer keeps LS tenants off its TPCs, and an LS tenant that ended
// leaves its seat. In carve-dra's runtime directory the node directory's
// tenants (read without its lock) are fixed TPCs too, as a claim's
// placement counts them. carve daemon calls it now and then.
func Fence(dir string) error {
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	l, err := list(dir)
	if err != nil {
		return err
	}
	l.others = viewOf(dir, false).tenants()
	return fence(dir, l.partitions(), l.seats(dir))
}

// fence writes into each node block in dir the TPCs of the partitions
// (parts: what dir holds now) on its GPU that are neither LS nor BE, and
// the BE tenants' floors, so that LS tenants' launches keep off them
// (ctl.Node.SetFixed), and seats the LS tenants (seats: every one dir
// holds now; ctl.Seats). Call it under the lock after a change.
func fence(dir string, parts []ctl.Snapshot, seats []ctl.Seat) error {
	seated := ctl.Seats(dir, seats)
	nodes, err := ctl.Nodes(dir)
	if err != nil || len(nodes) == 0 {
		return errors.Join(seated, err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	for _, n := range nodes {
		live := n.Live()
		var fixed topo.Enable
		for _, s := range parts {
			for _, p := range s.Parts() {
				onNode := p.Node == n.Name() || p.Node == "" && p.Live == live
				switch {
				case !onNode || s.Class == ctl.ClassLS: // an LS tenant's TPCs are its slot's reserved ones
				case s.Class == ctl.ClassBE:
					fixed = fixed.Or(p.Floor.And(live))
				default:
					fixed = fixed.Or(p.Mask.Enable().And(live))
				}
			}
		}
		n.SetFixed(fixed)
	}
	return seated
}
