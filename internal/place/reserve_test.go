// Tests of claims' reservations: their TPCs and directory, reserving
// after an interruption or at once, their processes, two GPUs of one
// model, and a BE claim's floor.

package place

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// TestReserveClaims: claims hold disjoint TPCs; one that does not fit is
// refused with what is free and who holds the rest; reserving again gives
// the same TPCs; releasing frees them, and releasing twice is no error.
func TestReserveClaims(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	a, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "40"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil || len(a.Set) != 40 || a.Again {
		t.Fatalf("first claim: %+v %v", a, err)
	}
	_, err = Place(dir, top, Request{Claim: &Claim{UID: "uid-b", Name: "ns/b"}, Spec: count(t, "30")})
	if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "30 TPCs asked for, 26 of 66 are free") ||
		!strings.Contains(err.Error(), "claim ns/a holds") || !strings.Contains(err.Error(), "outside Kubernetes") {
		t.Fatalf("a claim larger than what is free: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ctl.ClaimsDir, "uid-b")); !os.IsNotExist(err) {
		t.Errorf("a refused claim left its directory: %v", err)
	}
	b, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-b", Name: "ns/b"}, Spec: count(t, "26")})
	if err != nil || len(b.Set.Intersect(a.Set)) != 0 {
		t.Fatalf("second claim: %+v %v", b, err)
	}
	again, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-a", Name: "ns/a"}, Spec: count(t, "40"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil || !again.Again || again.Set.String() != a.Set.String() {
		t.Errorf("reserving again: %+v %v, want %s", again, err, a.Set)
	}
	// a process placed now finds no free TPC
	if _, err := Place(dir, top, Request{Spec: count(t, "1"), PID: os.Getpid()}); !errors.Is(err, ErrOverlap) {
		t.Errorf("a process beside claims holding every TPC: %v", err)
	}
	if ok, err := Release(dir, "uid-a"); !ok || err != nil {
		t.Errorf("release: %v %v", ok, err)
	}
	if ok, err := Release(dir, "uid-a"); ok || err != nil {
		t.Errorf("release again: %v %v, want false, nil", ok, err)
	}
	c, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-c", Name: "ns/c"}, Spec: count(t, "40")})
	if err != nil || len(c.Set.Intersect(b.Set)) != 0 {
		t.Errorf("after a release: %+v %v", c, err)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "../x"}, Spec: count(t, "1")}); err == nil {
		t.Error("a UID with a path in it was taken")
	}
}

// TestReserveLayout: an LS claim's directory holds its reservation and a
// link to the GPU's node block, both readable (and the node block writable)
// by any user of the claim's containers; a BE claim spans the GPU and
// leaves room for LS claims.
func TestReserveLayout(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	ls, err := Place(dir, top, Request{Claim: &Claim{UID: "ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(ls.Dir)
	if err != nil || st.Mode()&os.ModePerm != 0o777 || st.Mode()&os.ModeSticky == 0 {
		t.Errorf("claim directory: %v %v", st.Mode(), err)
	}
	node := filepath.Join(ls.Dir, ctl.NodeName(top.UUID))
	nst, err := os.Stat(node)
	if err != nil || nst.Mode().Perm() != 0o644 || !os.SameFile(nst, must(os.Stat(filepath.Join(dir, ctl.NodeName(top.UUID))))) {
		t.Errorf("node block in the claim: %v %v", nst, err)
	}
	// its LS file, the one file of the GPU's it may write, linked from
	// its seat's in the GPU's directory (which its pod gets read-only)
	lst, err := os.Stat(filepath.Join(ls.Dir, ctl.LSLinkName(ctl.NodeName(top.UUID))))
	if err != nil || lst.Mode().Perm() != 0o666 || !os.SameFile(lst, must(os.Stat(ctltest.LSFile(t, dir, ctl.NodeName(top.UUID), 0)))) {
		t.Errorf("LS file in the claim: %v %v", lst, err)
	}
	if _, err := os.Lstat(filepath.Join(ls.Dir, ctl.NodeName(top.UUID)+ctl.NodeBELink)); err == nil {
		t.Errorf("an LS claim's directory links the BE file, which BE claims write")
	}
	claims, _, err := ctl.Claims(dir)
	if err != nil || len(claims) != 1 || claims[0].Name() != "ns/ls" || claims[0].Root.Class != ctl.ClassLS ||
		claims[0].Root.SMs != 32 || claims[0].Root.Tide.Node != ctl.NodeName(top.UUID) {
		t.Fatalf("claims: %+v %v", claims, err)
	}
	all, _ := partition.ParseTPCs("all")
	be, err := Place(dir, top, Request{Claim: &Claim{UID: "be", Name: "ns/be"}, Spec: all, Policy: ctl.Policy{Class: ctl.ClassBE}})
	if err != nil || len(be.Set) != 66 {
		t.Fatalf("BE claim: %+v %v", be, err)
	}
	if ls2, err := Place(dir, top, Request{Claim: &Claim{UID: "ls2", Name: "ns/ls2"}, Spec: count(t, "50"), Policy: ctl.Policy{Class: ctl.ClassLS}}); err != nil ||
		len(ls2.Set.Intersect(ls.Set)) != 0 {
		t.Errorf("an LS claim beside an LS and a BE claim: %+v %v", ls2, err)
	}
}

// TestBEClaimsOwnBEFiles: each BE claim gets a BE file of its own in the
// GPU's directory, mode 0666 (its pod runs under any uid), linked into its
// directory as the one BE file it writes; its release removes it, leaving
// the other's, and nothing else there is a BE file. The link beside the
// node block to the GPU's one BE file of an older carve goes at the
// release's fence; the claims' own links stay.
func TestBEClaimsOwnBEFiles(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	all, _ := partition.ParseTPCs("all")
	node := ctl.NodeName(top.UUID)
	d := filepath.Join(dir, node+ctl.NodeDirSuffix)
	links := map[string]string{}
	for _, uid := range []string{"be-a", "be-b"} {
		p, err := Place(dir, top, Request{Claim: &Claim{UID: uid, Name: "ns/" + uid}, Spec: all, Policy: ctl.Policy{Class: ctl.ClassBE}})
		if err != nil {
			t.Fatal(err)
		}
		links[uid] = filepath.Join(p.Dir, node+ctl.NodeBELink)
	}
	beFiles := func() (out []string) {
		des, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			if ctl.IsBEFile(de.Name()) {
				out = append(out, de.Name())
			}
		}
		return out
	}
	for uid, link := range links {
		own := filepath.Join(d, ctl.BE{Claim: uid}.Name())
		lst, err := os.Stat(link)
		if err != nil || lst.Mode().Perm() != 0o666 || !os.SameFile(lst, must(os.Stat(own))) {
			t.Errorf("claim %s's BE link: %v %v, want its own file %s, mode 0666", uid, lst, err, own)
		}
	}
	if got := beFiles(); len(got) != 2 {
		t.Errorf("the GPU's BE files: %v, want the two claims'", got)
	}
	oldLink := filepath.Join(dir, node+ctl.NodeBELink)
	if err := os.WriteFile(oldLink, make([]byte, ctl.BESize), 0o666); err != nil {
		t.Fatal(err)
	}
	if ok, err := Release(dir, "be-a"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got := beFiles(); len(got) != 1 || got[0] != (ctl.BE{Claim: "be-b"}).Name() {
		t.Errorf("the GPU's BE files after be-a's release: %v, want be-b's alone", got)
	}
	if _, err := os.Lstat(oldLink); err == nil {
		t.Errorf("the link of an older carve beside the node block is left: %s", oldLink)
	}
	if lst, err := os.Stat(links["be-b"]); err != nil || !os.SameFile(lst, must(os.Stat(filepath.Join(d, ctl.BE{Claim: "be-b"}.Name())))) {
		t.Errorf("claim be-b's BE link after the fence: %v %v", lst, err)
	}
}

// TestReserveAgainRebuilds: reserving again a claim whose directory is
// gone (its record kept) makes it anew from the record, as the first
// reservation did: the directory of mode 1777, its root as recorded and
// the link to the GPU's node block; one whose link its pod removed gets
// it back.
func TestReserveAgainRebuilds(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	r := Request{Claim: &Claim{UID: "ls", Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS, Mem: ctl.MemLimit{Bytes: 4 << 30}}}
	first, err := Place(dir, top, r)
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(first.Dir, ctl.NodeName(top.UUID))
	for name, spoil := range map[string]func() error{
		"directory removed": func() error { return os.RemoveAll(first.Dir) },
		"node link removed": func() error { return os.Remove(node) },
	} {
		if err := spoil(); err != nil {
			t.Fatal(err)
		}
		again, err := Place(dir, top, r)
		if err != nil || !again.Again || again.Dir != first.Dir || again.Set.String() != first.Set.String() {
			t.Fatalf("%s: reserved again %+v %v, want %+v", name, again, err, first)
		}
		if st, err := os.Stat(again.Dir); err != nil || st.Mode().Perm() != 0o777 || st.Mode()&os.ModeSticky == 0 {
			t.Errorf("%s: the claim's directory: %v %v", name, st, err)
		}
		h, err := ctl.OpenPath(filepath.Join(again.Dir, ctl.ClaimRoot))
		if err != nil {
			t.Fatalf("%s: the claim's root: %v", name, err)
		}
		root := h.Snapshot()
		h.Close()
		if root.Mask != first.Mask || root.Class != ctl.ClassLS || root.Memory.Limit != 4<<30 {
			t.Errorf("%s: the root made anew: %+v", name, root)
		}
		nst, err := os.Stat(node)
		if err != nil || nst.Mode().Perm() != 0o644 || !os.SameFile(nst, must(os.Stat(filepath.Join(dir, ctl.NodeName(top.UUID))))) {
			t.Errorf("%s: the node block's link: %v %v", name, nst, err)
		}
		if _, err := os.Stat(filepath.Join(again.Dir, ctl.LSLinkName(ctl.NodeName(top.UUID)))); err != nil {
			t.Errorf("%s: the LS file's link: %v", name, err)
		}
	}
}

func must(st os.FileInfo, err error) os.FileInfo {
	if err != nil {
		panic(err)
	}
	return st
}

// TestReserveAfterInterruption: a reservation cut short (its directory made,
// no root written) is cleared by the next reservation, and that claim is
// reserved afresh.
func TestReserveAfterInterruption(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	for _, uid := range []string{"cut", "other"} {
		cd, _ := ctl.ClaimDir(dir, uid)
		if err := os.MkdirAll(cd, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(cd, ".root.new"), []byte("half"), 0o644)
	}
	r, err := Place(dir, top, Request{Claim: &Claim{UID: "cut", Name: "ns/cut"}, Spec: count(t, "8")})
	if err != nil || r.Again || len(r.Set) != 8 {
		t.Fatalf("%+v %v", r, err)
	}
	claims, pending, err := ctl.Claims(dir)
	if err != nil || len(claims) != 1 || len(pending) != 0 {
		t.Errorf("claims %d, pending %v: %v", len(claims), pending, err)
	}
}

// TestConcurrentReservations: 40 claims of 2 TPCs reserved at once from as
// many goroutines never share a TPC; the 34th and later are refused.
func TestConcurrentReservations(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	var mu sync.Mutex
	var union partition.Set
	refused := 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := Place(dir, top, Request{Claim: &Claim{UID: fmt.Sprintf("c%d", i)}, Spec: count(t, "2")})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if !errors.Is(err, ErrOverlap) {
					t.Errorf("claim %d: %v", i, err)
				}
				refused++
				return
			}
			if c := union.Intersect(r.Set); len(c) > 0 {
				t.Errorf("claim %d got TPCs %s of another claim", i, c)
			}
			union = union.Union(r.Set)
		}()
	}
	wg.Wait()
	if len(union) != 66 || refused != 7 {
		t.Errorf("%d TPCs reserved, %d claims refused; want 66 and 7", len(union), refused)
	}
}

// TestClaimProcessesByLock: blocks in a claim's directory count as running
// while a process holds their lock, whatever their pid says; the rest are
// removed.
func TestClaimProcessesByLock(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	r, err := Place(dir, top, Request{Claim: &Claim{UID: "p", Name: "ns/p"}, Spec: count(t, "4")})
	if err != nil {
		t.Fatal(err)
	}
	// pid 1 of a container, still running (a holder of the lock) and pid 7
	// of one that ended (no holder), though both pids run here
	for _, pid := range []int{1, os.Getpid()} {
		h, err := ctl.Create(r.Dir, ctl.Init{PID: pid, Parts: []ctl.Part{{Mask: r.Mask, Live: top.Live()}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	ctltest.HoldLock(t, filepath.Join(r.Dir, "1"))
	claims, _, err := ctl.Claims(dir)
	if err != nil || len(claims) != 1 || len(claims[0].Procs) != 1 || claims[0].Procs[0].PID != 1 {
		t.Fatalf("claims %+v %v, want one with pid 1 running", claims, err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, fmt.Sprint(os.Getpid()))); !os.IsNotExist(err) {
		t.Errorf("the ended process's block was kept: %v", err)
	}
}

// TestUpgradeKeepsRunningClaim: a claim of an older carve's runtime
// directory (no records) whose root cannot be read is not recorded; while
// a process of its pod runs (holds its block's lock), a placement keeps
// its directory, and removes it once none runs.
func TestUpgradeKeepsRunningClaim(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	cd := filepath.Join(dir, ctl.ClaimsDir, "old")
	if err := os.MkdirAll(cd, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ctl.ClaimRoot, "1"} {
		if err := os.WriteFile(filepath.Join(cd, f), make([]byte, ctl.Size), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	release := ctltest.HoldLock(t, filepath.Join(cd, "1"))
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "new", Name: "ns/new"}, Spec: count(t, "4")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cd, "1")); err != nil {
		t.Fatalf("a placement removed the directory of a claim whose process runs: %v", err)
	}
	release()
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "next", Name: "ns/next"}, Spec: count(t, "4")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cd); !os.IsNotExist(err) {
		t.Errorf("the unrecorded claim's directory was kept after its process ended: %v", err)
	}
}

// TestTwoGPUsAlike: two GPUs of one model with the same live TPCs (as
// H100s often are) are told apart by UUID: each GPU's claims and tenants
// count on that GPU only, and the fence of one GPU's node names its own
// partitions only.
func TestTwoGPUsAlike(t *testing.T) {
	a, _ := topologyJSON(t)
	b, _ := topologyJSON(t)
	b.UUID = "GPU-00000000-0000-0000-0000-00000000000b"
	dir := t.TempDir()
	for _, top := range []*topo.Topology{a, b} {
		if _, err := Place(dir, top, Request{Claim: &Claim{UID: "ls-" + top.UUID, Name: "ns/ls"}, Spec: count(t, "16"), Policy: ctl.Policy{Class: ctl.ClassLS}}); err != nil {
			t.Fatal(err)
		}
		if _, err := Place(dir, top, Request{Claim: &Claim{UID: "plain-" + top.UUID, Name: "ns/plain"}, Spec: count(t, "50")}); err != nil {
			t.Fatalf("50 more TPCs on %s: %v", top.UUID, err)
		}
	}
	tenant := sleepers(t, 1)[0]
	if _, err := Place(dir, a, Request{Spec: count(t, "1"), PID: tenant.Process.Pid}); err == nil {
		t.Error("a tenant placed on a full GPU")
	}
	for _, top := range []*topo.Topology{a, b} {
		hs, err := Holders(dir, top)
		if err != nil || len(hs) != 2 {
			t.Errorf("holders on %s: %v %v", top.UUID, hs, err)
		}
		n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
		if err != nil {
			t.Fatal(err)
		}
		f := n.Fixed()
		n.Close()
		if got := partition.FromEnable(top, f); len(got) != 50 {
			t.Errorf("fence of %s: %s, want its own 50 plain TPCs", top.UUID, got)
		}
	}
}

// TestBEClaimFloor: a BE claim's floor is placed like a BE tenant's: off
// the TPCs of LS claims and tenants, named in the node block's fixed, and
// kept off by later claims; reserving it again keeps it.
func TestBEClaimFloor(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	tenant := sleepers(t, 1)[0]
	ls, err := Place(dir, top, Request{Spec: count(t, "16"), PID: tenant.Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	lsClaim, err := Place(dir, top, Request{Claim: &Claim{UID: "ls", Name: "ns/ls"}, Spec: count(t, "20"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := DefaultSpec(ctl.Policy{Class: ctl.ClassBE})
	be := ctl.Policy{Class: ctl.ClassBE, Share: 1, Floor: 8}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "be", Name: "ns/be"}, Spec: all, Policy: be}); err != nil {
		t.Fatal(err)
	}
	floorOf := func(uid string) partition.Set {
		t.Helper()
		claims, _, err := ctl.Claims(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range claims {
			if c.UID == uid {
				return partition.FromEnable(top, c.Root.Floor)
			}
		}
		t.Fatalf("claim %s is not reserved", uid)
		return nil
	}
	floor := floorOf("be")
	if len(floor) != 8 || len(floor.Intersect(ls.Set.Union(lsClaim.Set))) != 0 {
		t.Fatalf("BE claim's floor %s, want 8 TPCs off the LS tenant's %s and the LS claim's %s", floor, ls.Set, lsClaim.Set)
	}
	n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
	if err != nil {
		t.Fatal(err)
	}
	fixed := partition.FromEnable(top, n.Fixed())
	n.Close()
	if fixed.String() != floor.String() {
		t.Errorf("node block's fixed %s, want the floor %s", fixed, floor)
	}
	if _, err := Place(dir, top, Request{Claim: &Claim{UID: "big", Name: "ns/big"}, Spec: count(t, "23")}); !errors.Is(err, ErrOverlap) ||
		!strings.Contains(err.Error(), "22 of 66 are free") || !strings.Contains(err.Error(), "claim ns/be holds "+floor.String()) {
		t.Errorf("a claim larger than what the LS partitions and the floor leave: %v", err)
	}
	rest, err := Place(dir, top, Request{Claim: &Claim{UID: "rest", Name: "ns/rest"}, Spec: count(t, "22")})
	if err != nil || len(rest.Set.Intersect(floor)) != 0 {
		t.Errorf("a claim beside the floor: %v %v", rest, err)
	}
	again, err := Place(dir, top, Request{Claim: &Claim{UID: "be", Name: "ns/be"}, Spec: all, Policy: be})
	if err != nil || !again.Again || floorOf("be").String() != floor.String() {
		t.Errorf("reserving the BE claim again: %+v %v; floor %s, want %s", again, err, floorOf("be"), floor)
	}
}
