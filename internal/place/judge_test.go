// Tests of what root records of a tenant the first time it sees its
// first block in the node directory, and what other users believe of it
// until then: the block judged as a placement would have judged it
// (ctl.RecordTenants, ctl.Records.View); and of a move carve set made
// that root's fence has not yet taken.

package place

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// handBlock makes by hand, as uid would, the first block in dir of pid,
// a process of its own (its pid and start ticks right): every TPC of
// top, a memory limit of the GPU's memory and a bandwidth share of the
// whole epoch.
func handBlock(t *testing.T, dir string, top *topo.Topology, uid, pid int) {
	t.Helper()
	h, err := ctl.Create(dir, ctl.Init{PID: pid, MemLimit: top.MemoryBytes, BW: ctl.BW{Share: 1, Epoch: ctl.BWEpoch, Len: ctl.BWEpoch},
		Parts: []ctl.Part{{GPU: top.UUID, Node: ctl.NodeName(top.UUID), Live: top.Live(), SMs: SMs(top, allOf(top))}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := os.Chown(blockOf(dir, pid), uid, uid); err != nil {
		t.Fatal(err)
	}
}

// allOf is every TPC of top.
func allOf(top *topo.Topology) partition.Set {
	var s partition.Set
	for i := range top.TPCs {
		s = append(s, i)
	}
	return s
}

// holderOf is tenant pid's holder on top in dir as root's carve believes
// it (another user's tenant: its record, or what root will record).
func holderOf(t *testing.T, dir string, top *topo.Topology, pid int) Holder {
	t.Helper()
	hs, err := Holders(dir, top)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Tenant == pid {
			return h
		}
	}
	t.Fatalf("tenant %d holds nothing on the GPU", pid)
	return Holder{}
}

// TestNodeDirHandBlockJudged: in the node directory uid 65534 makes by
// hand the first block of a process of its own that names every TPC,
// the GPU's memory and the whole bandwidth epoch, beside its tenant (8
// TPCs, 1 GiB, a share of 0.5) and uid 65533's (8 TPCs), both recorded.
// Before root's fence every user believes it holds the TPCs the others
// leave free, as root then records it (with no limit, which does not
// fit, and no share, whose slot meets the other's); the block is
// reported changed. Once uid 65534's first tenant ends, uid 65533 is
// placed on its 8 TPCs with half the GPU's memory and a share of 0.5.
func TestNodeDirHandBlockJudged(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place", "PLACE_COUNT=8"}
	a := asUser(t, bin, 65534, append(env, "PLACE_MEM=1G", "PLACE_BW=0.5")...)
	b := asUser(t, bin, 65533, env...)
	for _, h := range []*helper{a, b} {
		defer func() { h.in.Close(); h.cmd.Wait() }()
	}
	sa, sb := placedSet(t, "uid 65534", a.line), placedSet(t, "uid 65533", b.line)
	if err := Fence(dir, top); err != nil { // root's, knowing the GPU's memory
		t.Fatal(err)
	}
	pid := sleepers(t, 1)[0].Process.Pid
	handBlock(t, dir, top, 65534, pid)
	var free partition.Set
	for _, i := range allOf(top) {
		if !sa.Contains(i) && !sb.Contains(i) {
			free = append(free, i)
		}
	}
	before := holderOf(t, dir, top, pid)
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	after := holderOf(t, dir, top, pid)
	if !sameSet(before.TPCs, free) || !sameSet(after.TPCs, free) {
		t.Errorf("the block made by hand holds %v before root's fence, %v after; want the free %v", before.TPCs, after.TPCs, free)
	}
	if after.Mem != 0 || after.BW.Share != 0 || before.BW.Share != 0 {
		t.Errorf("recorded with limit %d and share %g (believed %g before); want none, beside 65534's 1 GiB and 0.5", after.Mem, after.BW.Share, before.BW.Share)
	}
	if l, err := ctl.Read(dir); err != nil || !skipped(l.Skipped, blockOf(dir, pid), "changed") {
		t.Errorf("the block made by hand is not reported: %v, %v", l.Skipped, err)
	}

	a.in.Close()
	a.cmd.Wait()
	half := strconv.FormatUint(top.MemoryBytes/2, 10)
	c := asUser(t, bin, 65533, append(env, "PLACE_MEM="+half, "PLACE_BW=0.5")...)
	defer func() { c.in.Close(); c.cmd.Wait() }()
	if sc := placedSet(t, "uid 65533 beside the block made by hand", c.line); !sameSet(sc, sa) {
		t.Errorf("uid 65533 placed on %v, want the ended tenant's %v", sc, sa)
	}
}

// TestNodeDirHonestRecorded: placements of carve run by two users, made
// one after another with no fence of root's between (so each is judged
// beside the others not yet recorded), are recorded as placed: an LS
// tenant with a limit and a share, a BE tenant of every TPC with a floor
// and a limit, an LS tenant beside its floor with a share, a plain one
// with a limit; none is reported changed, nor lost by carve run's look
// (Lost). A block uid 65534 makes by hand
// after them (every TPC, the GPU's memory, the whole epoch), for a
// process that started before them, takes none of theirs.
func TestNodeDirHonestRecorded(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	hand := sleepers(t, 1)[0].Process.Pid
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place"}
	var pids []int
	for _, c := range []struct {
		uid int
		env []string
	}{
		{65534, []string{"PLACE_CLASS=ls", "PLACE_COUNT=8", "PLACE_MEM=1G", "PLACE_BW=0.25"}},
		{65533, []string{"PLACE_CLASS=be", "PLACE_COUNT=" + strconv.Itoa(len(top.TPCs)), "PLACE_FLOOR=8", "PLACE_MEM=2G"}},
		{65534, []string{"PLACE_CLASS=ls", "PLACE_COUNT=8", "PLACE_BW=0.5"}},
		{65533, []string{"PLACE_COUNT=4", "PLACE_MEM=1G"}},
	} {
		h := asUser(t, bin, c.uid, append(env, c.env...)...)
		defer func() { h.in.Close(); h.cmd.Wait() }()
		placedSet(t, "uid "+strconv.Itoa(c.uid)+" "+c.env[0], h.line)
		pids = append(pids, h.cmd.Process.Pid)
	}
	handBlock(t, dir, top, 65534, hand)
	for last := changedAt(t, blockOf(dir, pids[len(pids)-1])); changedAt(t, blockOf(dir, hand)) <= last; {
		os.Chown(blockOf(dir, hand), 65534, 65534) // made later (the clock of file times is coarse)
	}
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	l, err := ctl.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range l.Skipped {
		if b.Path != blockOf(dir, hand) {
			t.Errorf("skipped: %s", b.Why)
		}
	}
	if !skipped(l.Skipped, blockOf(dir, hand), "changed") {
		t.Errorf("the block made by hand is not reported changed: %v", l.Skipped)
	}
	for _, pid := range pids {
		h, err := ctl.OpenPath(blockOf(dir, pid))
		if err != nil {
			t.Fatal(err)
		}
		s := h.Snapshot()
		h.Close()
		if err := Lost(dir, ctl.Entry{Snapshot: s, Path: blockOf(dir, pid)}, false, false); err != nil {
			t.Errorf("carve run's look at the record of tenant %d: %v", pid, err)
		}
		got := recorded(t, dir, pid)
		if got.Mask != s.Mask || got.Floor != s.Floor || got.Memory.Limit != s.Memory.Limit || got.BW != s.BW || got.BWOff != s.BWOff {
			t.Errorf("tenant %d recorded as mask %v floor %v limit %d share %+v at %v; placed %v, %v, %d, %+v at %v", pid,
				got.Mask, got.Floor, got.Memory.Limit, got.BW, got.BWOff, s.Mask, s.Floor, s.Memory.Limit, s.BW, s.BWOff)
		}
	}
}

// TestNodeDirMoveSeenBeforeFence: uid 65534 moves its recorded tenant
// (carve set) onto 16 TPCs, free ones among them; before root's fence
// takes the move, uid 65533's placement believes the tenant holds both
// its recorded TPCs and those it moved onto, and takes none of them;
// after the fence, none of those it moved onto. A move of it onto uid
// 65533's TPCs (--share), which root will not take, frees nothing and
// takes nothing in what the others believe.
func TestNodeDirMoveSeenBeforeFence(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place"}
	a := asUser(t, bin, 65534, append(env, "PLACE_COUNT=8")...)
	b := asUser(t, bin, 65533, append(env, "PLACE_COUNT=8")...)
	for _, h := range []*helper{a, b} {
		defer func() { h.in.Close(); h.cmd.Wait() }()
	}
	sa, sb := placedSet(t, "uid 65534", a.line), placedSet(t, "uid 65533", b.line)
	pa := a.cmd.Process.Pid
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	move := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=move", "PLACE_PID=" + strconv.Itoa(pa)}
	if m := asUser(t, bin, 65534, append(move, "PLACE_COUNT=16")...); m.line != "moved" {
		t.Fatalf("uid 65534's move: %q", m.line)
	}
	moved := holderOf(t, dir, top, pa).TPCs // as root believes it
	h, err := ctl.OpenPath(blockOf(dir, pa))
	if err != nil {
		t.Fatal(err)
	}
	onto := partition.FromMask(top, h.Snapshot().Mask)
	h.Close()
	if !sameSet(moved, sa.Union(onto)) {
		t.Fatalf("before root's fence the moved tenant is believed to hold %v, want %v and %v", moved, sa, onto)
	}
	// every TPC but 65533's and those recorded of 65534's: some are those it moved onto
	rest := strconv.Itoa(len(top.TPCs) - len(sa) - len(sb))
	if c := asUser(t, bin, 65533, append(env, "PLACE_COUNT="+rest)...); !strings.HasPrefix(c.line, "refused") {
		c.in.Close()
		c.cmd.Wait()
		t.Fatalf("before root's fence uid 65533 asking for %s TPCs beside the move onto %v: %q", rest, onto, c.line)
	}
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	rest = strconv.Itoa(len(top.TPCs) - len(sb) - len(onto))
	c := asUser(t, bin, 65533, append(env, "PLACE_COUNT="+rest)...)
	defer func() { c.in.Close(); c.cmd.Wait() }()
	if sc := placedSet(t, "uid 65533 after root's fence", c.line); overlap(sc, onto) {
		t.Fatalf("after root's fence uid 65533 was placed on %v, which 65534's tenant moved onto (%v)", sc, onto)
	}

	tpcs := strconv.Itoa(sb[0]) + "-" + strconv.Itoa(sb[0]+1)
	if m := asUser(t, bin, 65534, append(move, "PLACE_TPCS="+tpcs)...); m.line != "moved" {
		t.Fatalf("uid 65534's move onto 65533's TPCs: %q", m.line)
	}
	if got := holderOf(t, dir, top, pa).TPCs; !sameSet(got, onto) {
		t.Errorf("after a move onto another's TPCs the tenant is believed to hold %v, want its recorded %v", got, onto)
	}
}

// changedAt is the change time of path in ns.
func changedAt(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ctim.Nano()
}
