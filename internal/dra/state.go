// The driver's claim state: what is prepared on the node, by claim UID,
// as its checkpoint holds it, and unpreparing, sweeping and describing
// claims there (prepare.go prepares them).

package dra

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
)

// state is the claims prepared on one node, kept in the checkpoint (the
// claims directory), with what preparing them needs: the node's name and
// GPUs and where things are. It holds nothing in memory that the
// checkpoint does not, so a restarted plugin has the state it left.
type state struct {
	node       string
	gpus       []GPU
	paths      Paths
	present    func(uuid string) error // nil: Present
	checkpoint checkpoint
}

// state is the driver's claim state.
func (d *Driver) state() *state {
	return &state{node: d.Node, gpus: d.GPUs, paths: d.Paths, present: d.Present, checkpoint: checkpoint{dir: d.Paths.RuntimeDir}}
}

// prepared is claim uid's reservation, if it is prepared.
func (s *state) prepared(uid string) (ctl.Claim, bool, error) {
	return s.checkpoint.get(uid)
}

// unprepare frees claim uid's TPCs and removes its directory, then its
// CDI spec from specs. A claim that is not prepared is no error.
func (s *state) unprepare(specs *cdi.Cache, uid string) error {
	if err := s.checkpoint.release(uid); err != nil {
		return err
	}
	stepDone("released")
	return specs.RemoveSpec(specName(uid))
}

// sweep removes CDI specs of the driver's whose claim is not prepared:
// left by a plugin stopped between writing a spec and returning its
// error; and brings the claims published in the node directory up to
// date (publish).
func (s *state) sweep() error {
	s.publish()
	uids, err := s.checkpoint.uids()
	if err != nil {
		return err
	}
	reserved := map[string]bool{}
	for uid := range uids {
		reserved[specName(uid)] = true
	}
	entries, err := os.ReadDir(s.paths.CDIDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	prefix := cdi.GenerateSpecName(CDIVendor, CDIClass) + "_"
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, prefix) && !reserved[name] {
			os.Remove(filepath.Join(s.paths.CDIDir, name))
		}
	}
	return nil
}

// status describes c's reservation on the node, its partition on the GPU
// of device.
func (s *state) status(c *resourceapi.ResourceClaim, device string) (Status, error) {
	cl, ok, err := s.prepared(string(c.UID))
	if err != nil || !ok {
		return Status{}, cmp.Or(err, fmt.Errorf("claim %s is not reserved", c.UID))
	}
	for _, g := range s.gpus {
		part, on := place.PartOn(cl.Root, g.Topology)
		if !on || g.DeviceName() != device {
			continue
		}
		set := partition.FromMask(g.Topology, part.Mask)
		return Status{GPU: g.Topology.UUID, TPCs: set.String(), Count: len(set), SMs: part.SMs,
			Class: cmp.Or(ctl.ClassName(cl.Root.Class), "none"), MPS: cl.Root.Flags&ctl.FlagMPS != 0, Memory: cl.Root.Memory.Limit}, nil
	}
	return Status{}, fmt.Errorf("claim %s has no partition on %s", c.UID, device)
}

// publish brings the claims published in the node directory, where there
// is one, up to date with those prepared (place.Publish): each prepared
// claim's copy written, a released one's removed. Its error is logged,
// never fatal: the claims stay prepared.
func (s *state) publish() {
	if err := place.Publish(s.checkpoint.dir); err != nil {
		klog.Background().Error(err, "Publishing the claims in the node directory")
	}
}
