// The driver's checkpoint: carve's records of the claims in its runtime
// directory, with the claims' directories, the one place where what is
// prepared on the node is kept.

package dra

import (
	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/topo"
)

// checkpoint is the claims of a runtime directory (ctl.Claims): for each
// prepared claim, named by its UID, carve's record of its reservation (its
// name, class, flags, partition on each of its GPUs and memory limit, in
// ctl.ClaimRecords, which no pod sees) and its directory, its pod's (its
// root, its processes' blocks). A claim is prepared on the node exactly
// when its record is there, so a restarted plugin reads back what it
// prepared, preparing a claim again finds what the first prepare
// reserved, and nothing a pod writes changes either.
//
// It is written only through placement (place.Place, place.Release), under
// placement's lock, so that a claim's reservation is atomic with every
// other tenant's on the node.
type checkpoint struct {
	dir string // carve's runtime directory
}

// get is claim uid's reservation, if it is reserved.
func (c checkpoint) get(uid string) (ctl.Claim, bool, error) {
	claims, _, err := ctl.Claims(c.dir)
	if err != nil {
		return ctl.Claim{}, false, err
	}
	for _, cl := range claims {
		if cl.UID == uid {
			return cl, true, nil
		}
	}
	return ctl.Claim{}, false, nil
}

// uids are the claims reserved, by UID.
func (c checkpoint) uids() (map[string]bool, error) {
	claims, _, err := ctl.Claims(c.dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, cl := range claims {
		out[cl.UID] = true
	}
	return out, nil
}

// reserve places a claim's partitions and writes its directory; a claim
// reserved before gets its reservation back (Placed.Again).
func (c checkpoint) reserve(t *topo.Topology, r place.Request) (*place.Placed, error) {
	return place.Place(c.dir, t, r)
}

// release frees claim uid's partitions and removes its directory; a claim
// that is not reserved is no error.
func (c checkpoint) release(uid string) error {
	_, err := place.Release(c.dir, uid)
	return err
}
