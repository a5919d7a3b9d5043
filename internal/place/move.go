// Moving a running tenant to another partition on one of its GPUs (carve
// set): Move rewrites the mask of each of its processes' blocks.

package place

import (
	"fmt"
	"os"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// Moved is what Move changed.
type Moved struct {
	Before, After partition.Set
	PIDs          []int // the tenant's processes whose blocks were changed
	Generation    uint64
	Overlaps      []Overlap
}

// running is the block of pid, a process that still runs, whose block the
// caller may change (another user's is refused, ctl.NotYours).
func running(dir string, pid int) (ctl.Snapshot, error) {
	h, err := ctl.Open(dir, pid)
	if err != nil {
		return ctl.Snapshot{}, err
	}
	snap := h.Snapshot()
	err = h.Writable()
	h.Close()
	if err != nil {
		return ctl.Snapshot{}, err
	}
	if !snap.Alive() {
		return ctl.Snapshot{}, fmt.Errorf("process %d has exited", pid)
	}
	return snap, nil
}

// Move gives the tenant of pid (the process carve run started and the
// child processes that copied its block) the partition s on t, one of its
// GPUs, under dir's lock. It applies from each process's next kernel
// launch; its partitions on other GPUs stay.
func Move(dir string, t *topo.Topology, pid int, s partition.Spec, share bool) (*Moved, error) {
	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := running(dir, pid)
	if err != nil {
		return nil, err
	}
	part, ok := PartOn(snap, t)
	if !ok {
		return nil, fmt.Errorf("process %d has no partition on %s", pid, t.UUID)
	}
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	if err := fresh(dir, l.recs); err != nil {
		return nil, err
	}
	set, overlaps, err := choose(t, Request{Spec: s, PID: snap.Tenant, Share: share, Policy: ctl.Policy{Class: snap.Class}}, l.holders(t))
	if err != nil {
		return nil, err
	}
	mask, err := partition.Mask(t, set)
	if err != nil {
		return nil, err
	}
	m := &Moved{Before: partition.FromMask(t, part.Mask), After: set, Overlaps: overlaps}
	for i, e := range l.blocks {
		if e.Tenant != snap.Tenant || !OnGPU(e.Snapshot, t) {
			continue
		}
		b, err := ctl.Open(dir, e.PID)
		if err != nil {
			continue // ended since the listing
		}
		var gen uint64
		if e.GPU == "" { // a block of one GPU, which it does not name
			gen, err = b.SetMask(mask, SMs(t, set))
		} else {
			gen, err = b.SetPartMask(t.UUID, mask, SMs(t, set))
		}
		if err == nil {
			l.blocks[i].Snapshot = b.Snapshot()
			touch(dir, b.Path)
		}
		b.Close()
		if err != nil {
			return nil, err
		}
		if e.PID == pid {
			m.Generation = gen
		}
		m.PIDs = append(m.PIDs, e.PID)
	}
	fence(dir, l, t)
	return m, nil
}

// touch moves the modification time of path, a block a user's carve just
// changed through its mapping (which moves none), in the node directory:
// root's carve daemon looks at the times every 100 ms, and takes the
// change into its record of the tenant (ctl.RecordTenants) at once, not at
// its pass of each second. Elsewhere it does nothing.
func touch(dir, path string) {
	if ctl.Shared(dir) && !ctl.WritesNodes(dir) {
		now := time.Now()
		os.Chtimes(path, now, now)
	}
}
