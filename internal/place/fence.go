// Fences: the TPCs each node block's LS tenants keep off, those of
// partitions outside tide and BE tenants' floors, the LS tenants' seats
// (ctl.Seats) and the BE files (ctl.BEFiles), brought up to date after
// every change.

package place

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
)

// Fence brings the node blocks' fixed TPCs and seats up to date (see
// fence) under dir's lock (root's, in the node directory, goes on past a
// user's hold of it: lockOrPass): a partition that ended since the last placement
// no longer keeps LS tenants off its TPCs, and an LS tenant that ended
// leaves its seat. In carve-dra's runtime directory the node directory's
// tenants (read without its lock) are fixed TPCs too, as a claim's
// placement counts them. carve daemon calls it now and then. gpus are
// the GPUs whose memory it knows, which a first record's memory limit
// must fit (ctl.RecordTenants; it takes no raise).
func Fence(dir string, gpus ...*topo.Topology) error {
	// root's, in the node directory, goes on past a user's hold of the lock
	unlock, _, err := lockPassing(dir, ctl.Shared(dir) && ctl.WritesNodes(dir))
	if err != nil {
		return err
	}
	defer unlock()
	l, err := list(dir)
	if err != nil {
		return err
	}
	l.others = viewOf(dir, false).tenants()
	return fence(dir, l, gpus...)
}

// fence writes into each node block in dir the TPCs of the partitions
// (l's: what dir holds now) on its GPU that are neither LS nor BE, and
// the BE tenants' floors, so that LS tenants' launches keep off them
// (ctl.Node.SetFixed), seats the LS tenants of blocks and claims (every
// one dir holds now: ctl.SeatsOf, ctl.Seats) and gives each writer of a
// BE file its own (ctl.BEsOf, ctl.BEFiles). Call it under the
// lock after a change. A user's carve in the node directory writes no
// node block (ctl.WritesNodes): there root's carve daemon fences (Fence),
// records each tenant of carve run first (ctl.RecordTenants: its class,
// SLO, memory limit and TPCs, which seats and fences follow, its limit
// judged against the memory of gpus, and a later change of the last two
// where a placement would have allowed it, a raise only of l.raise), and
// makes the node blocks that users' LS and BE tenants name (makeNodes).
func fence(dir string, l *listing, gpus ...*topo.Topology) error {
	if !ctl.WritesNodes(dir) {
		return nil
	}
	recs, recorded := ctl.RecordTenants(dir, l.blocks, l.claims, ctl.GPUMemory{Bytes: memoryOf(gpus), Charge: MemCharge, Raise: l.raise})
	l.recs = recs
	parts := l.partitions()
	made := makeNodes(dir, parts)
	seated := errors.Join(recorded, made, ctl.Seats(dir, ctl.SeatsOf(dir, recs, l.blocks, l.claims)))
	nodes, err := ctl.Nodes(dir)
	if err != nil {
		return errors.Join(seated, err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	seated = errors.Join(seated, ctl.BEFiles(dir, nodes, ctl.BEsOf(dir, recs, l.blocks, l.claims)))
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

// makeNodes makes, in a Shared directory (the node directory, as root),
// the node block of each GPU that an LS or BE tenant of parts names and
// that has none: there a user's carve makes none (openNode). A block
// names its own, so only a node block's name of its GPU's UUID
// (ctl.NodeName) is made, and with the live TPCs of every partition that
// names it: a user who writes its block can add TPCs the GPU lacks (which
// fence then fixes for nothing), not hide those of another's partition.
func makeNodes(dir string, parts []ctl.Snapshot) error {
	if !ctl.Shared(dir) {
		return nil
	}
	live := map[string]topo.Enable{}
	for _, s := range parts {
		if s.Class != ctl.ClassLS && s.Class != ctl.ClassBE {
			continue
		}
		for _, p := range s.Parts() {
			if p.GPU != "" && p.Node == ctl.NodeName(p.GPU) {
				live[p.Node] = live[p.Node].Or(p.Live)
			}
		}
	}
	var errs []error
	for name, l := range live {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		n, err := ctl.OpenNode(dir, name, l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.Close()
	}
	return errors.Join(errs...)
}

// memoryOf is the memory of each of gpus by UUID (0: not one of them).
func memoryOf(gpus []*topo.Topology) func(string) uint64 {
	return func(uuid string) uint64 {
		for _, t := range gpus {
			if SameGPU(t.UUID, uuid) {
				return t.MemoryBytes
			}
		}
		return 0
	}
}
