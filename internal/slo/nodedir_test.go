// Tests of the controller in the node directory, whose blocks are their
// users' to write: a tenant of carve run is an LS tenant with an SLO only
// as root's record of it says (ctl.Records.Of), never as its blocks say.

package slo_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/slo"
)

// newNodePlant is a plant in a node directory (root's, as carve node init
// makes it): its tenants are uid 65534's once chowned (user), recorded at
// root's fence (place.Fence, as root's carve daemon runs it).
func newNodePlant(t *testing.T) *plant {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node directory is root's")
	}
	dir := filepath.Join(t.TempDir(), "node")
	if err := ctl.InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	p := &plant{t: t, dir: dir}
	p.restart()
	return p
}

// user makes the block of pid in p's directory uid 65534's, as a user's
// carve run makes it.
func (p *plant) user(pid int) {
	p.t.Helper()
	if err := os.Chown(filepath.Join(p.dir, strconv.Itoa(pid)), 65534, 65534); err != nil {
		p.t.Fatal(err)
	}
}

// fence is root's carve daemon's fence of p's directory, which records
// its tenants.
func (p *plant) fence() {
	p.t.Helper()
	if err := place.Fence(p.dir); err != nil {
		p.t.Fatal(err)
	}
}

// TestNodeDirSLOFromRecord: in the node directory, a user's BE tenant
// recorded BE that rewrites its block to class LS with an SLO of 10 us,
// and reports periods far over it, does not hold the GPU's other BE
// tenant back (its share stays 1, unsteered) nor has an SLO the
// controller sees; a user's LS tenant recorded with an SLO of 5 ms still
// steers that BE tenant down.
func TestNodeDirSLOFromRecord(t *testing.T) {
	p := newNodePlant(t)
	be := p.addBE(1, 300*time.Microsecond)
	h, pid, kill := p.create(ctl.Policy{Class: ctl.ClassBE, Share: 1, Inflight: 8}, node)
	p.user(pid)
	p.user(be.Snapshot().PID)
	p.fence()
	b := ctltest.MapBlock(t, h.Path)
	b.TenantClass, b.SLOUS = ctl.ClassLS, 10 // what its process wrote after root recorded it
	p.ls = append(p.ls, &lsPlant{pid: pid, kill: kill, b: b, base: 2 * time.Millisecond, k: 4, rate: 40})
	for range 60 {
		p.run(1)
		p.fence()
	}
	if s := be.Snapshot(); s.Tide.Share != 1 || s.Steered != nil {
		t.Errorf("BE beside a BE tenant that wrote class LS and 10 us: share %g (steered %+v), want 1, unsteered", s.Tide.Share, s.Steered)
	}
	if v, ok := p.c.View(slo.Key{PID: pid}); ok {
		t.Errorf("the rewritten BE tenant is seen as an LS tenant with an SLO: %+v", v)
	}

	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	p.user(l.pid)
	p.fence()
	p.run(60)
	if s := be.Snapshot(); s.Tide.Share >= 1 || s.Steered == nil {
		t.Errorf("BE beside a recorded LS tenant of SLO 5 ms: share %g (steered %+v), want steered below 1", s.Tide.Share, s.Steered)
	}
	if v, ok := p.c.View(slo.Key{PID: l.pid}); !ok || v.SLO.Max != 5*time.Millisecond {
		t.Errorf("the recorded LS tenant's view: %+v, %v; want its record's SLO 5ms", v, ok)
	}
}
