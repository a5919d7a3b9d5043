// Tests of the controller on a Kubernetes claim's processes, whose
// blocks their pod may write: their class, SLO and GPUs are carve's
// record of the claim, never what the blocks say. The test binary
// doubles as a claim's process that holds the lock on its block, as its
// shim does (claim processes run while the lock is held: ctltest.HoldLock).

package slo_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/slo"
)

// TestMain: the binary doubles as a claim's process that holds the lock
// on its block (ctltest.HoldLock).
func TestMain(m *testing.M) {
	ctltest.ServeHold()
	os.Exit(m.Run())
}

// addClaim reserves claim uid on nodes as carve does (record), and adds
// the block of its process 7 as its pod wrote it (wrote: class and SLO),
// on node node-A, with the plant's LS periods.
func (p *plant) addClaim(uid string, record ctl.Init, wrote ctl.Init) *lsPlant {
	p.t.Helper()
	l := &lsPlant{pid: 7, b: p.claimBlock(uid, record, wrote), base: 2 * time.Millisecond, k: 4, rate: 40}
	p.ls = append(p.ls, l)
	return l
}

// claimBlock reserves claim uid as carve does (record) and makes the
// block of its process 7 as its pod wrote it (wrote), on node node-A,
// held by a running process; it returns the block, mapped.
func (p *plant) claimBlock(uid string, record ctl.Init, wrote ctl.Init) *ctl.Block {
	p.t.Helper()
	cd, err := ctl.ClaimDir(p.dir, uid)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.MkdirAll(cd, 0o755); err != nil {
		p.t.Fatal(err)
	}
	record.Comm = []string{"claim", "ns/" + uid}
	root, err := ctl.CreateClaimRoot(cd, record)
	if err != nil {
		p.t.Fatal(err)
	}
	root.Close()
	if err := ctl.RecordClaim(p.dir, uid, record); err != nil {
		p.t.Fatal(err)
	}
	wrote.PID = 7
	wrote.Parts = []ctl.Part{{Node: node, GPU: "GPU-" + uuidOf(node), Live: [4]uint32{0xffff}}}
	h, err := ctl.Create(cd, wrote)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { h.Close() })
	ctltest.HoldLock(p.t, h.Path)
	return ctltest.MapBlock(p.t, h.Path)
}

// TestClaimSLOFromRecord: a claim's pod that writes a 10 us SLO (or the
// LS class, in a BE claim) into its process's block, and reports itself
// busy the whole window where no SLO is recorded, does not hold the BE tenants beside it: the
// controller takes the SLO of carve's record of the claim (none, or a
// loose one that the pod's periods are well within).
func TestClaimSLOFromRecord(t *testing.T) {
	part := []ctl.Part{{Node: node, GPU: "GPU-" + uuidOf(node), Live: [4]uint32{0xffff}}}
	tight := ctl.Tide{SLO: ctl.SLO{Max: 10 * time.Microsecond}}
	for _, tc := range []struct {
		name   string
		record ctl.Init
		wrote  ctl.Init
		busy   bool    // the pod says it is busy the whole window (its right: that holds the BE under an SLO of its record)
		least  float64 // the BE's share after a while
		view   ctl.SLO // the SLO the controller sees of the claim's process
	}{
		{"LS claim, no SLO", ctl.Init{Class: ctl.ClassLS, Parts: part}, ctl.Init{Class: ctl.ClassLS, Tide: tight}, true, 1, ctl.SLO{}},
		{"LS claim, loose SLO", ctl.Init{Class: ctl.ClassLS, Tide: ctl.Tide{SLO: ctl.SLO{Max: time.Second}}, Parts: part},
			ctl.Init{Class: ctl.ClassLS, Tide: tight}, false, 0.9, ctl.SLO{Max: time.Second}},
		{"BE claim", ctl.Init{Class: ctl.ClassBE, Tide: ctl.Tide{Share: 1}, Parts: part}, ctl.Init{Class: ctl.ClassLS, Tide: tight}, true, 1, ctl.SLO{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlant(t)
			be := p.addBE(1, 300*time.Microsecond)
			l := p.addClaim("uid-x", tc.record, tc.wrote)
			for range 60 {
				if tc.busy {
					l.b.BusyNS += uint64(slo.DefaultInterval) // busy the whole step
				}
				p.run(1)
			}
			if s := be.Snapshot(); s.Tide.Share < tc.least {
				t.Errorf("BE beside the claim: share %g (steered %+v), want at least %g", s.Tide.Share, s.Steered, tc.least)
			}
			v, ok := p.c.View(slo.Key{Claim: "ns/uid-x", PID: 7})
			if ok != (tc.view != ctl.SLO{}) || v.SLO != tc.view {
				t.Errorf("the claim's view: %+v, %v; want its record's SLO %v", v, ok, tc.view)
			}
			if _, err := os.Stat(filepath.Join(p.dir, ctl.ClaimsDir, "uid-x", "7")); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestClaimBECannotDragTheLevel: a BE claim's pod that writes a share of
// 0 into its process's block at every step does not pull its GPU's level
// down, and so not the share of the BE tenant beside it, which steps as it
// does beside an honest claim; nor after a restart of the controller.
func TestClaimBECannotDragTheLevel(t *testing.T) {
	part := []ctl.Part{{Node: node, GPU: "GPU-" + uuidOf(node), Live: [4]uint32{0xffff}}}
	run := func(hostile bool) []float64 {
		p := newPlant(t)
		p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
		be := p.addBE(1, 300*time.Microsecond)
		claim := ctl.Init{Class: ctl.ClassBE, Tide: ctl.Tide{Share: 1}, Parts: part}
		b := p.claimBlock("uid-b", claim, claim)
		var shares []float64
		for i := range 80 {
			if i == 50 {
				p.restart()
			}
			if hostile {
				atomic.StoreUint32(&b.SharePPM, 0)
			}
			p.run(1)
			shares = append(shares, be.Snapshot().Tide.Share)
		}
		return shares
	}
	honest, hostile := run(false), run(true)
	if honest[len(honest)-1] >= 1 || honest[len(honest)-1] <= 0 {
		t.Fatalf("beside an honest claim the BE ends at share %g: the SLO does not bind, the test shows nothing", honest[len(honest)-1])
	}
	for i := range honest {
		if hostile[i] != honest[i] {
			t.Fatalf("step %d: the BE's share %g beside a claim writing 0, %g beside an honest one\nhonest  %v\nhostile %v",
				i, hostile[i], honest[i], honest, hostile)
		}
	}
}
