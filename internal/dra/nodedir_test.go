// Tests of claims and the node directory through the driver (as root: the
// node directory is root's): a prepared claim is published there and holds
// its TPCs and memory against users' placements, a claim's prepare keeps
// off the node directory's tenants, an unprepare removes its copy, and the
// sweep mends the published claims.

package dra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
)

// withNodeDir makes a node directory as carve node init does and names it
// as the node's (CARVE_NODE_DIR).
func withNodeDir(t *testing.T) string {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node directory and the claims published in it are root's")
	}
	base := t.TempDir()
	os.Chmod(base, 0o755)
	nd := filepath.Join(base, "node")
	if err := ctl.InitNodeDir(nd, -1); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CARVE_NODE_DIR", nd)
	return nd
}

// published are the claims carve-dra published in the node directory nd,
// by name, as users' carve lists them.
func published(t *testing.T, nd string) map[string]ctl.Claim {
	t.Helper()
	claims, _, err := ctl.Claims(nd)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ctl.Claim{}
	for _, c := range claims {
		if c.Published {
			out[strings.TrimPrefix(c.Name(), "ns/")] = c
		}
	}
	return out
}

// TestPreparedClaimInNodeDir: a claim prepared while the node directory
// exists is published there with its TPCs and memory limit; a user's
// placement there keeps off its TPCs and counts its memory; a tenant of
// the node directory's is kept off by the next claim's prepare; an
// unprepare removes the claim's copy, and the sweep writes a lost copy
// again and removes one of a claim not prepared.
func TestPreparedClaimInNodeDir(t *testing.T) {
	nd := withNodeDir(t)
	td := newTestDriver(t)
	top := td.GPUs[0].Topology
	a := td.memClaim(t, "a", 40, "60Gi")
	if r := td.prepare(t, a)["a"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	pub := published(t, nd)
	sets := td.reserved(t)
	if got := pub["a"]; len(pub) != 1 || partition.FromMask(top, got.Root.Mask).String() != sets["a"].String() ||
		got.Root.Memory.Limit == 0 {
		t.Fatalf("published %+v, want claim a on %v with its memory limit", pub, sets["a"])
	}
	_, err := place.Place(nd, top, place.Request{Spec: partition.CountOf(27), PID: os.Getpid()})
	if !errors.Is(err, place.ErrOverlap) || !strings.Contains(err.Error(), "claim ns/a holds") {
		t.Errorf("a user's placement of more TPCs than the claim leaves: %v", err)
	}
	_, err = place.Place(nd, top, place.Request{Spec: partition.CountOf(1), PID: os.Getpid(),
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: 30 << 30}}})
	if !errors.Is(err, place.ErrMemory) || !strings.Contains(err.Error(), "claim ns/a holds") {
		t.Errorf("a user's limit that does not fit beside the claim's: %v", err)
	}

	tenant, err := place.Place(nd, top, place.Request{Spec: partition.CountOf(20), PID: os.Getpid(), Comm: []string{"tenant"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tenant.Block.Close()
	if r := td.prepare(t, td.claim(t, "b", 7))["b"]; r.Err == nil || !strings.Contains(r.Err.Error(), "(tenant) holds") {
		t.Errorf("a claim of more TPCs than the node directory's tenant leaves: %v", r.Err)
	}
	if r := td.prepare(t, td.claim(t, "c", 6))["c"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	if c := td.reserved(t)["c"]; len(c.Intersect(tenant.Set)) != 0 {
		t.Errorf("claim c on %v, which the node directory's tenant holds %v of", c, tenant.Set)
	}

	res, err := td.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: a.UID}})
	if err != nil || res[a.UID] != nil {
		t.Fatal(err, res)
	}
	if pub := published(t, nd); len(pub) != 1 || pub["c"].UID == "" {
		t.Fatalf("after unpreparing a: published %v, want c alone", pub)
	}
	pd := filepath.Join(nd, ctl.PublishedDir)
	os.Rename(filepath.Join(pd, "uid-c"), filepath.Join(pd, "uid-gone")) // c's lost, and one of a claim not prepared
	if err := td.Sweep(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(pd, "*"))
	if len(names) != 1 || filepath.Base(names[0]) != "uid-c" {
		t.Errorf("after the sweep: %v, want uid-c alone", names)
	}
}
