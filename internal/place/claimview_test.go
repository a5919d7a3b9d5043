// Tests of claims and the node directory, one view of the node (as root:
// the node directory is root's, and its published claims too): a claim
// reserved in carve-dra's runtime directory is published there and holds
// its TPCs and memory against users' placements, a claim's placement
// keeps off the node directory's tenants, a release frees its TPCs for
// them, a published claim carve does not trust is skipped and reported,
// and a user can neither make nor change one.

package place

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// helperWrite tries, as a user, to make a published claim in PLACE_DIR
// (or a tenant record: PLACE_SUB names the directory, ctl.PublishedDir
// where unset), to write and to remove one there (PLACE_UID's), and to
// replace the directory of them, and prints what each did.
func helperWrite() {
	pd := filepath.Join(os.Getenv("PLACE_DIR"), cmp.Or(os.Getenv("PLACE_SUB"), ctl.PublishedDir))
	uid := filepath.Join(pd, os.Getenv("PLACE_UID"))
	var out []string
	say := func(what string, err error) {
		if err == nil {
			out = append(out, what+":done")
		} else {
			out = append(out, what+":refused")
		}
	}
	say("make", os.WriteFile(filepath.Join(pd, "uid-forged"), make([]byte, ctl.Size), 0o644))
	f, err := os.OpenFile(uid, os.O_WRONLY, 0)
	if err == nil {
		f.Close()
	}
	say("write", err)
	say("remove", os.Remove(uid))
	say("rename", os.Rename(pd, pd+".old"))
	say("chmod", os.Chmod(pd, 0o777))
	fmt.Println(strings.Join(out, " "))
	os.Exit(0)
}

// claimView makes a node directory (nodeDir, as root), names it as the
// node's (CARVE_NODE_DIR) and returns it with carve-dra's runtime
// directory and the test binary every user may run.
func claimView(t *testing.T) (nd, rd, bin string) {
	nd, bin = nodeDir(t)
	t.Setenv("CARVE_NODE_DIR", nd)
	return nd, t.TempDir(), bin
}

// publishedClaims are the claims ctl.Read lists in dir that carve-dra
// published there, by UID, and what it skipped.
func publishedClaims(t *testing.T, dir string) (map[string]ctl.Claim, []ctl.Bad) {
	t.Helper()
	l, err := ctl.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ctl.Claim{}
	for _, c := range l.Claims {
		if !c.Published || len(c.Procs) > 0 {
			t.Fatalf("claim %s in the node directory: %+v", c.UID, c)
		}
		out[c.UID] = c
	}
	return out, l.Skipped
}

// TestClaimHeldInNodeDir: a claim reserved in carve-dra's runtime
// directory while the node directory exists is published there, root's,
// mode 0644 (written anew when it is reserved again), and listed as a
// claim with no process; a user's placement
// there keeps off its TPCs (the error names it) and counts its memory
// limit; its release removes the copy, and the user is then given its
// TPCs.
func TestClaimHeldInNodeDir(t *testing.T) {
	nd, rd, bin := claimView(t)
	top, js := topologyJSON(t)
	mem := top.MemoryBytes * 3 / 4
	a, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "40"),
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: mem}}})
	if err != nil || a.NodeView != nil {
		t.Fatalf("reserving: %+v %v", a, err)
	}
	path := filepath.Join(nd, ctl.PublishedDir, "uid-a")
	st, err := os.Lstat(path)
	if err != nil || st.Mode() != 0o644 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("published claim %s: %v, %v; want a file of root's, mode 0644", path, st, err)
	}
	os.Remove(path) // lost: reserving the claim again writes it anew
	again, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "40"),
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: mem}}})
	if err != nil || !again.Again {
		t.Fatalf("reserving again: %+v %v", again, err)
	}
	pub, bad := publishedClaims(t, nd)
	c, ok := pub["uid-a"]
	if !ok || len(pub) != 1 || len(bad) > 0 || c.Name() != "ns/a" || c.Root.Memory.Limit != mem ||
		partition.FromMask(top, c.Root.Mask).String() != a.Set.String() {
		t.Fatalf("the node directory lists %+v (skipped %v), want claim uid-a on %s", pub, bad, a.Set)
	}

	_, err = Place(nd, top, Request{Spec: count(t, "1"), PID: os.Getpid(), Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: top.MemoryBytes / 2}}})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "claim ns/a holds") {
		t.Errorf("a limit that does not fit beside the claim's: %v", err)
	}

	env := []string{"PLACE_DIR=" + nd, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place"}
	u := asUser(t, bin, 65534, append(env, "PLACE_COUNT=27")...)
	if !strings.HasPrefix(u.line, "refused") || !strings.Contains(u.line, "26 of 66 are free") || !strings.Contains(u.line, "claim ns/a holds") {
		t.Errorf("a user's placement of more TPCs than the claim leaves: %q", u.line)
	}
	u = asUser(t, bin, 65534, append(env, "PLACE_COUNT=26")...)
	if got := placedSet(t, "uid 65534", u.line); len(got.Intersect(a.Set)) != 0 {
		t.Errorf("a user's placement %v overlaps the claim's %v", got, a.Set)
	}

	if ok, err := Release(rd, "uid-a"); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the released claim's copy: %v", err)
	}
	u = asUser(t, bin, 65534, append(env, "PLACE_COUNT=40")...)
	if got := placedSet(t, "uid 65534 after the release", u.line); len(got.Intersect(a.Set)) != 40 {
		t.Errorf("after the release a user is given %v, want the claim's %v", got, a.Set)
	}
}

// TestClaimKeepsOffNodeDirTenants: a claim's placement keeps off the TPCs
// of the node directory's tenants and counts their memory, and writes
// nothing of theirs.
func TestClaimKeepsOffNodeDirTenants(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	tenant, err := Place(nd, top, Request{Spec: count(t, "30"), PID: os.Getpid(), Comm: []string{"tenant"},
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: top.MemoryBytes / 2}}})
	if err != nil {
		t.Fatal(err)
	}
	block := tenant.Block.Path
	tenant.Block.Close()
	before, _ := os.ReadFile(block)
	_, err = Place(rd, top, Request{Claim: &Claim{UID: "uid-b", Name: "ns/b"}, Spec: count(t, "37")})
	if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "36 of 66 are free") || !strings.Contains(err.Error(), "(tenant) holds") {
		t.Errorf("a claim of more TPCs than the tenant leaves: %v", err)
	}
	_, err = Place(rd, top, Request{Claim: &Claim{UID: "uid-b", Name: "ns/b"}, Spec: count(t, "8"),
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: top.MemoryBytes * 3 / 4}}})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "(tenant) holds") {
		t.Errorf("a claim's limit that does not fit beside the tenant's: %v", err)
	}
	b, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-b", Name: "ns/b"}, Spec: count(t, "36")})
	if err != nil || len(b.Set.Intersect(tenant.Set)) != 0 {
		t.Fatalf("a claim beside the tenant: %+v %v (the tenant holds %v)", b, err, tenant.Set)
	}
	if after, _ := os.ReadFile(block); string(after) != string(before) {
		t.Error("the claim's placement wrote the tenant's block")
	}
}

// TestPublishedUntrusted: a published claim carve does not trust (not
// root's, a symbolic link, another layout) is skipped and reported, never
// fatal to a placement or listing there, while root's own copy is
// honoured; a directory of them that is not root's honours none, and the
// next Publish replaces it.
func TestPublishedUntrusted(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	if _, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "20")}); err != nil {
		t.Fatal(err)
	}
	pd := filepath.Join(nd, ctl.PublishedDir)
	good, _ := os.ReadFile(filepath.Join(pd, "uid-a"))
	os.WriteFile(filepath.Join(pd, "uid-users"), good, 0o644) // a copy, as a user's
	os.Chown(filepath.Join(pd, "uid-users"), 65534, 65534)
	os.Symlink("uid-a", filepath.Join(pd, "uid-link"))
	os.WriteFile(filepath.Join(pd, "uid-junk"), []byte("not a block"), 0o644)
	pub, bad := publishedClaims(t, nd)
	reasons := map[string]string{}
	for _, b := range bad {
		reasons[filepath.Base(b.Path)] = b.Reason
	}
	if _, ok := pub["uid-a"]; !ok || len(pub) != 1 || reasons["uid-users"] != "owner" || reasons["uid-link"] != "symlink" ||
		reasons["uid-junk"] != "size" {
		t.Fatalf("listed %v, skipped %v; want uid-a alone, the rest skipped (owner, symlink, size)", pub, bad)
	}
	if _, err := Place(nd, top, Request{Spec: count(t, "46"), PID: os.Getpid()}); err != nil {
		t.Errorf("a placement beside published claims carve skips: %v", err)
	}

	if err := os.Chown(pd, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	pub, bad = publishedClaims(t, nd)
	if len(pub) != 0 || len(bad) != 1 || bad[0].Reason != "published" || !strings.Contains(bad[0].Why, "not root") {
		t.Fatalf("a directory of published claims not root's: listed %v, skipped %v", pub, bad)
	}
	if err := Publish(rd); err != nil {
		t.Fatal(err)
	}
	if pub, bad = publishedClaims(t, nd); len(pub) != 1 || len(bad) != 0 {
		t.Errorf("after Publish: listed %v, skipped %v; want uid-a alone", pub, bad)
	}
}

// TestUserCannotWritePublished: a user can neither make a published claim
// in the node directory nor write, remove or rename one, nor replace or
// open the directory of them.
func TestUserCannotWritePublished(t *testing.T) {
	nd, rd, bin := claimView(t)
	top, _ := topologyJSON(t)
	if _, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "20")}); err != nil {
		t.Fatal(err)
	}
	h := asUser(t, bin, 65534, "PLACE_HELPER=write", "PLACE_DIR="+nd, "PLACE_UID=uid-a")
	if want := "make:refused write:refused remove:refused rename:refused chmod:refused"; h.line != want {
		t.Errorf("a user: %q, want %q", h.line, want)
	}
	if pub, bad := publishedClaims(t, nd); len(pub) != 1 || len(bad) != 0 {
		t.Errorf("listed %v, skipped %v; want uid-a alone", pub, bad)
	}
}

// TestNoNodeDirNoPublish: without a node directory a claim's placement
// publishes nothing and says nothing of it.
func TestNoNodeDirNoPublish(t *testing.T) {
	top, _ := topologyJSON(t)
	rd := t.TempDir()
	p, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "20")})
	if err != nil || p.NodeView != nil {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(rd, ctl.PublishedDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("published in carve-dra's own directory: %v", err)
	}
}

// TestPublishedLSClaimFenced: the node directory's LS tenants keep off a
// published LS claim's TPCs (its node block's fixed TPCs), and the claim
// takes no seat there: it is seated in carve-dra's runtime directory.
func TestPublishedLSClaimFenced(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	c, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := Place(nd, top, Request{Spec: count(t, "8"), PID: os.Getpid(), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	ls.Block.Close()
	n, err := ctl.OpenNode(nd, ctl.NodeName(top.UUID), top.Live())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if got := partition.FromEnable(top, n.Fixed()); got.String() != c.Set.String() {
		t.Errorf("the node directory's node block keeps its LS tenants off %s, want the LS claim's %s", got, c.Set)
	}
	l, err := ctl.Read(nd)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ctl.SeatsOf(nd, l.Records, l.Live, l.Claims) {
		if s.Claim != "" {
			t.Errorf("the published claim is seated in the node directory: %+v", s)
		}
	}
}

// TestNodeDirTenantsFenced: in carve-dra's runtime directory, the node
// block keeps LS claims off the node directory's tenants' TPCs, from the
// claim's placement and from Fence (carve daemon's) alike.
func TestNodeDirTenantsFenced(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	tenant, err := Place(nd, top, Request{Spec: count(t, "30"), PID: os.Getpid(), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	tenant.Block.Close()
	if _, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}}); err != nil {
		t.Fatal(err)
	}
	fixed := func(when string) {
		t.Helper()
		n, err := ctl.OpenNode(rd, ctl.NodeName(top.UUID), top.Live())
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		if got := partition.FromEnable(top, n.Fixed()); got.String() != tenant.Set.String() {
			t.Errorf("%s: carve-dra's node block keeps LS claims off %s, want the node directory's tenant's %s", when, got, tenant.Set)
		}
	}
	fixed("after the claim's placement")
	if err := Fence(rd); err != nil {
		t.Fatal(err)
	}
	fixed("after Fence")
}

// TestNothingSharedAcross: no tide reaches between carve-dra's claims and
// the node directory's tenants, so nothing shares TPCs across them: a
// user's BE tenant of every TPC is given those no claim holds, a user's
// --share that meets a claim's TPCs is refused, and so is a --share limit
// that would over-commit a claim's memory; a BE claim is given the TPCs
// no tenant of the node directory holds, with its floor among them.
func TestNothingSharedAcross(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	procs := sleepers(t, 4)
	all, _ := partition.ParseTPCs("all")
	be := ctl.Policy{Class: ctl.ClassBE, Epoch: 10 * time.Millisecond, Floor: 8}
	a, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "40"),
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: top.MemoryBytes * 3 / 4}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Place(nd, top, Request{Spec: all, PID: procs[0].Process.Pid, Policy: be})
	if err != nil || len(b.Set) != len(top.TPCs)-40 || len(b.Set.Intersect(a.Set)) != 0 {
		t.Fatalf("a user's BE tenant of every TPC beside a claim of 40: %+v %v, want the 26 the claim leaves", b, err)
	}
	_, err = Place(nd, top, Request{Spec: count(t, "30"), PID: procs[1].Process.Pid, Share: true})
	if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "claim ns/a holds") || !strings.Contains(err.Error(), "tide does not reach") {
		t.Errorf("a user's --share onto a claim's TPCs: %v", err)
	}
	_, err = Place(nd, top, Request{Spec: count(t, "1"), PID: procs[1].Process.Pid, Share: true,
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: top.MemoryBytes / 2}}})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "claim ns/a holds") {
		t.Errorf("a user's --share limit over a claim's memory: %v", err)
	}
	if _, err := Place(nd, top, Request{Spec: count(t, "1"), PID: procs[2].Process.Pid, Share: true,
		Policy: ctl.Policy{Mem: ctl.MemLimit{Bytes: top.MemoryBytes / 8}}}); err != nil {
		t.Errorf("a user's --share limit beside the claim's: %v", err)
	}

	if ok, err := Release(rd, "uid-a"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	plain, err := Place(nd, top, Request{Spec: count(t, "30"), PID: procs[3].Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-be", Name: "ns/be"}, Spec: all, Policy: be})
	if err != nil || len(c.Set.Intersect(plain.Set)) != 0 || len(c.Set) == 0 {
		t.Fatalf("a BE claim beside the node directory's tenants: %+v %v (a plain tenant holds %v)", c, err, plain.Set)
	}
}

// TestNodeDirHonoursNoClaimRecord: a claim record a user made in the node
// directory (claims are carve-dra's, in its own runtime directory; only
// their published copies are here) holds no TPCs there: a placement of
// the whole GPU is given them all, and carve ls lists no such claim.
func TestNodeDirHonoursNoClaimRecord(t *testing.T) {
	nd, _ := nodeDir(t)
	top, _ := topologyJSON(t)
	in := ctl.Init{Class: ctl.ClassBE, Parts: []ctl.Part{{Mask: [4]uint32{}, Live: top.Live()}}} // every TPC
	const uid = "0f0e0d0c-aaaa-bbbb-cccc-000000000009"
	if err := ctl.RecordClaim(nd, uid, in); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(nd, ctl.ClaimRecords), filepath.Join(nd, ctl.ClaimRecords, uid)} {
		if err := os.Chown(p, 65534, 65534); err != nil { // the user's
			t.Fatal(err)
		}
	}
	l, err := ctl.Read(nd)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Claims {
		if c.UID == uid {
			t.Fatalf("a user's claim record in the node directory is listed: %+v", c)
		}
	}
	p, err := Place(nd, top, Request{Spec: count(t, "40"), PID: os.Getpid()})
	if err != nil {
		t.Fatalf("placing the whole GPU beside a user's claim record: %v", err)
	}
	p.Block.Close()
}

// fixedOf is what the node block of t's GPU in dir keeps its LS tenants
// off.
func fixedOf(t *testing.T, dir string, top *topo.Topology) partition.Set {
	t.Helper()
	n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	return partition.FromEnable(top, n.Fixed())
}

// TestNodeDirBEHeldFromClaims: a BE tenant of the node directory yields
// to no claim (tide does not reach across), so a claim's placement, LS or
// plain, keeps off all of its TPCs, not only its floor: it is refused
// while the BE holds every TPC left, and given what is left once another
// claim is released; carve-dra's node block keeps LS claims off the BE's
// TPCs too.
func TestNodeDirBEHeldFromClaims(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	all, _ := partition.ParseTPCs("all")
	plain, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "20")})
	if err != nil {
		t.Fatal(err)
	}
	be, err := Place(nd, top, Request{Spec: all, PID: sleepers(t, 1)[0].Process.Pid, Comm: []string{"be"},
		Policy: ctl.Policy{Class: ctl.ClassBE, Epoch: 10 * time.Millisecond, Floor: 8}})
	if err != nil || len(be.Set) != len(top.TPCs)-20 {
		t.Fatalf("a BE tenant of every TPC beside a claim of 20: %+v %v", be, err)
	}
	be.Block.Close()
	for _, class := range []uint32{ctl.ClassLS, ctl.ClassNone} {
		_, err = Place(rd, top, Request{Claim: &Claim{UID: "uid-c", Name: "ns/c"}, Spec: count(t, "8"), Policy: ctl.Policy{Class: class}})
		if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "0 of 66 are free") || !strings.Contains(err.Error(), "(be) holds") {
			t.Errorf("a claim (class %d) beside a BE tenant of every TPC left: %v", class, err)
		}
	}
	if ok, err := Release(rd, "uid-a"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	ls, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-ls", Name: "ns/ls"}, Spec: count(t, "8"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil || len(ls.Set.Intersect(be.Set)) != 0 {
		t.Fatalf("an LS claim once claim ns/a was released: %+v %v (the BE holds %v)", ls, err, be.Set)
	}
	p, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-p", Name: "ns/p"}, Spec: count(t, "12")})
	if err != nil || len(p.Set.Intersect(be.Set)) != 0 || len(p.Set.Union(ls.Set).Intersect(plain.Set)) != 20 {
		t.Fatalf("a plain claim of the TPCs left: %+v %v (the BE holds %v, the LS claim %v)", p, err, be.Set, ls.Set)
	}
	if got := fixedOf(t, rd, top); len(got.Intersect(be.Set)) != len(be.Set) {
		t.Errorf("carve-dra's node block keeps LS claims off %s, not all of the node directory's BE tenant's %s", got, be.Set)
	}
}

// TestBEClaimHeldFromNodeDir: the reverse, a BE claim yields to no tenant
// of the node directory, so a user's placement, LS or plain, keeps off
// all of its TPCs: refused while it holds every TPC left, given what is
// left once a tenant ends; the node directory's node block keeps its LS
// tenants off the claim's TPCs too.
func TestBEClaimHeldFromNodeDir(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	procs := sleepers(t, 3)
	all, _ := partition.ParseTPCs("all")
	plain, err := Place(nd, top, Request{Spec: count(t, "20"), PID: procs[0].Process.Pid, Comm: []string{"plain"}})
	if err != nil {
		t.Fatal(err)
	}
	be, err := Place(rd, top, Request{Claim: &Claim{UID: "uid-be", Name: "ns/be"}, Spec: all,
		Policy: ctl.Policy{Class: ctl.ClassBE, Epoch: 10 * time.Millisecond, Floor: 8}})
	if err != nil || len(be.Set) != len(top.TPCs)-20 {
		t.Fatalf("a BE claim of every TPC beside a plain tenant of 20: %+v %v", be, err)
	}
	for _, class := range []uint32{ctl.ClassLS, ctl.ClassNone} {
		_, err = Place(nd, top, Request{Spec: count(t, "8"), PID: procs[1].Process.Pid, Policy: ctl.Policy{Class: class}})
		if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "0 of 66 are free") || !strings.Contains(err.Error(), "claim ns/be holds") {
			t.Errorf("a user's tenant (class %d) beside a BE claim of every TPC left: %v", class, err)
		}
	}
	procs[0].Process.Kill()
	procs[0].Wait()
	ls, err := Place(nd, top, Request{Spec: count(t, "8"), PID: procs[1].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil || len(ls.Set.Intersect(be.Set)) != 0 {
		t.Fatalf("a user's LS tenant once the plain one ended: %+v %v (the BE claim holds %v)", ls, err, be.Set)
	}
	ls.Block.Close()
	p, err := Place(nd, top, Request{Spec: count(t, "12"), PID: procs[2].Process.Pid})
	if err != nil || len(p.Set.Intersect(be.Set)) != 0 || len(p.Set.Union(ls.Set).Intersect(plain.Set)) != 20 {
		t.Fatalf("a user's plain tenant of the TPCs left: %+v %v (the BE claim holds %v, the LS %v)", p, err, be.Set, ls.Set)
	}
	p.Block.Close()
	if got := fixedOf(t, nd, top); len(got.Intersect(be.Set)) != len(be.Set) {
		t.Errorf("the node directory's node block keeps LS tenants off %s, not all of the BE claim's %s", got, be.Set)
	}
}

// TestBEYieldsWithinSide: on one side nothing changes: with the other side
// there (the node directory, carve-dra's runtime directory), a later LS
// placement on a BE's side still takes the BE's TPCs but its floor, in the
// node directory and among claims alike.
func TestBEYieldsWithinSide(t *testing.T) {
	nd, rd, _ := claimView(t)
	top, _ := topologyJSON(t)
	procs := sleepers(t, 2)
	all, _ := partition.ParseTPCs("all")
	bePolicy := ctl.Policy{Class: ctl.ClassBE, Epoch: 10 * time.Millisecond, Floor: 8}
	for _, side := range []struct {
		name, dir string
		place     func(r Request) (*Placed, error)
	}{
		{"the node directory", nd, func(r Request) (*Placed, error) { return Place(nd, top, r) }},
		{"carve-dra's runtime directory", rd, func(r Request) (*Placed, error) { return Place(rd, top, r) }},
	} {
		beReq := Request{Spec: all, PID: procs[0].Process.Pid, Policy: bePolicy}
		lsReq := Request{Spec: count(t, "50"), PID: procs[1].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}}
		if side.dir == rd {
			beReq.Claim, lsReq.Claim = &Claim{UID: "uid-be", Name: "ns/be"}, &Claim{UID: "uid-ls", Name: "ns/ls"}
		}
		be, err := side.place(beReq)
		if err != nil || len(be.Set) != len(top.TPCs) {
			t.Fatalf("%s: a BE of every TPC: %+v %v", side.name, be, err)
		}
		var floor partition.Set
		hs, err := Holders(side.dir, top)
		for _, h := range hs {
			if h.Class == ctl.ClassBE && !h.Outside {
				floor = h.Floor
			}
		}
		if err != nil || len(floor) != 8 {
			t.Fatalf("%s: the BE's floor: %v %v", side.name, floor, err)
		}
		ls, err := side.place(lsReq)
		if err != nil || len(ls.Set.Intersect(be.Set)) != 50 || len(ls.Set.Intersect(floor)) != 0 {
			t.Fatalf("%s: a later LS beside the BE: %+v %v (the BE's floor %v)", side.name, ls, err, floor)
		}
		for _, p := range []*Placed{be, ls} {
			if p.Block != nil {
				p.Block.Close()
			}
		}
		if side.dir == nd { // its tenants end, leaving the GPU to the claims
			for _, p := range procs {
				p.Process.Kill()
				p.Wait()
			}
			procs = sleepers(t, 2)
		}
	}
}
