// Tests of what other users believe of a tenant's TPCs and memory limit
// in the node directory: root's record of it (ctl.Records.Of, View),
// which root's fence changes only where a placement would have allowed
// the change (ctl.RecordTenants).

package place

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
)

// recorded is the record of pid's tenant in dir as carve believes it:
// its block as ctl.Records.Of has it, read anew.
func recorded(t *testing.T, dir string, pid int) ctl.Entry {
	t.Helper()
	h, err := ctl.OpenPath(blockOf(dir, pid))
	if err != nil {
		t.Fatal(err)
	}
	e := ctl.Entry{Snapshot: h.Snapshot(), Path: h.Path}
	h.Close()
	recs, bad := ctl.ReadRecords(dir)
	if !recs.Recorded(e) || len(bad) != 0 {
		t.Fatalf("no record of tenant %d (skipped %v)", pid, bad)
	}
	return recs.Of(e)
}

// TestNodeDirTPCsFromRecord: in the node directory uid 65534's tenant,
// recorded by root's fence, rewrites its block's mask to every TPC and
// its memory limit to the GPU's memory; root's fence keeps the record,
// the block is reported (ctl.Read: changed), and uid 65533's next
// placement (a new process reading the records) still gets the TPCs and
// memory the record leaves free. A move of 65534's tenant onto free TPCs
// (carve set) is taken into the record; one onto 65533's (--share) is
// not, nor after root's fence restarts (a fence of a new listing and
// reading of the records).
func TestNodeDirTPCsFromRecord(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place"}
	a := asUser(t, bin, 65534, append(env, "PLACE_COUNT=8", "PLACE_MEM=1G")...)
	b := asUser(t, bin, 65533, append(env, "PLACE_COUNT=8", "PLACE_MEM=1G")...)
	for _, h := range []*helper{a, b} {
		defer func() { h.in.Close(); h.cmd.Wait() }()
	}
	sa, sb := placedSet(t, "uid 65534", a.line), placedSet(t, "uid 65533", b.line)
	pa := a.cmd.Process.Pid
	if err := Fence(dir, top); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	was := recorded(t, dir, pa)

	// the attack: every TPC, and the GPU's memory
	rewriteRoot(t, blockOf(dir, pa), func(b *ctl.Block) { b.Mask, b.MemLimit = [4]uint32{}, top.MemoryBytes })
	owned(t, blockOf(dir, pa), 65534, 0o644)
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	if got := recorded(t, dir, pa); got.Mask != was.Mask || got.Memory.Limit != 1<<30 {
		t.Fatalf("root's fence took the rewritten block: mask %v, limit %d; want %v, 1 GiB", got.Mask, got.Memory.Limit, was.Mask)
	}
	l, err := ctl.Read(dir)
	if err != nil || !skipped(l.Skipped, blockOf(dir, pa), "changed") {
		t.Errorf("the rewritten block is not reported: %v, %v", l.Skipped, err)
	}
	hs, err := Holders(dir, top)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Tenant == pa && (!sameSet(h.TPCs, sa) || h.Mem != 1<<30) {
			t.Errorf("the attacker is listed as holding %v and %d bytes; want %v, 1 GiB", h.TPCs, h.Mem, sa)
		}
	}
	rest := len(top.TPCs) - len(sa) - len(sb) - 8 // 8 left free
	half := strconv.FormatUint(top.MemoryBytes/2, 10)
	c := asUser(t, bin, 65533, append(env, "PLACE_COUNT="+strconv.Itoa(rest), "PLACE_MEM="+half)...)
	defer func() { c.in.Close(); c.cmd.Wait() }()
	sc := placedSet(t, "uid 65533 beside the rewritten block", c.line)
	if len(sc) != rest || overlap(sc, sa) || overlap(sc, sb) {
		t.Fatalf("uid 65533 placed %v beside %v and %v", sc, sa, sb)
	}

	// a move onto free TPCs (carve set), taken at root's next fence
	move := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=move", "PLACE_PID=" + strconv.Itoa(pa)}
	if m := asUser(t, bin, 65534, append(move, "PLACE_COUNT=4")...); m.line != "moved" {
		t.Fatalf("uid 65534's move: %q", m.line)
	}
	h, err := ctl.OpenPath(blockOf(dir, pa))
	if err != nil {
		t.Fatal(err)
	}
	moved := h.Snapshot().Mask
	h.Close()
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	if got := recorded(t, dir, pa); got.Mask != moved || got.Memory.Limit != 1<<30 {
		t.Fatalf("the move onto free TPCs: recorded %v (limit %d), want %v", got.Mask, got.Memory.Limit, moved)
	}

	// a move onto uid 65533's TPCs, --share: not taken, not after a restart
	if m := asUser(t, bin, 65534, append(move, "PLACE_TPCS="+strconv.Itoa(sb[0])+"-"+strconv.Itoa(sb[0]+1))...); m.line != "moved" {
		t.Fatalf("uid 65534's move onto another's TPCs: %q", m.line)
	}
	for range 2 {
		if err := Fence(dir, top); err != nil {
			t.Fatal(err)
		}
		if got := recorded(t, dir, pa); got.Mask != moved {
			t.Fatalf("the move onto another's TPCs was taken: recorded %v, want %v", got.Mask, moved)
		}
	}
	// a new process of uid 65533 finds the TPCs of the first move's
	// partition held, the rest free
	free := len(top.TPCs) - len(sb) - len(sc) - len(partition.FromMask(top, moved))
	d := asUser(t, bin, 65533, append(env, "PLACE_COUNT="+strconv.Itoa(free))...)
	defer func() { d.in.Close(); d.cmd.Wait() }()
	if sd := placedSet(t, "uid 65533 after the moves", d.line); overlap(sd, partition.FromMask(top, moved)) {
		t.Errorf("uid 65533 was placed on %v, which the recorded move holds (%v)", sd, partition.FromMask(top, moved))
	}
}

// overlap says whether a and b share a TPC.
func overlap(a, b partition.Set) bool { return len(a.Intersect(b)) > 0 }

// sameSet says whether a and b are one set.
func sameSet(a, b partition.Set) bool { return len(a) == len(b) && len(a.Intersect(b)) == len(a) }

// TestNodeDirBWFromRecord: in the node directory uid 65534's tenant with
// a bandwidth share of 0.5, recorded by root's fence, rewrites its block
// to a share of the whole epoch; uid 65533's --bw 0.5 is still placed,
// in the other half of the epoch: the slots are the record's.
func TestNodeDirBWFromRecord(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place", "PLACE_COUNT=8", "PLACE_BW=0.5"}
	a := asUser(t, bin, 65534, env...)
	defer func() { a.in.Close(); a.cmd.Wait() }()
	placedSet(t, "uid 65534", a.line)
	pa := a.cmd.Process.Pid
	if err := Fence(dir, top); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	rewriteRoot(t, blockOf(dir, pa), func(b *ctl.Block) {
		b.BWPPM, b.BWLenNS, b.BWOffNS = 1e6, uint64(ctl.BWEpoch), 0
	})
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	b := asUser(t, bin, 65533, env...)
	defer func() { b.in.Close(); b.cmd.Wait() }()
	placedSet(t, "uid 65533 beside the rewritten share", b.line)
	h, err := ctl.OpenPath(blockOf(dir, b.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := recorded(t, dir, pa).BWOff; h.Snapshot().BWOff == got {
		t.Errorf("uid 65533's slot starts at %v, as the recorded one of 65534's", got)
	}
}

// TestNodeDirOddBlockRecorded: a tenant that, before root's first fence,
// writes into its block what a record cannot hold as it is (a class carve
// does not name, a node name with a space) is recorded all the same, made
// plain, so that its later rewrite to every TPC stops no other user's
// placement (where its record could not be written, it was believed as
// its block said for good).
func TestNodeDirOddBlockRecorded(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js, "PLACE_HELPER=place", "PLACE_COUNT=8"}
	a := asUser(t, bin, 65534, env...)
	defer func() { a.in.Close(); a.cmd.Wait() }()
	sa := placedSet(t, "uid 65534", a.line)
	pa := a.cmd.Process.Pid
	rewriteRoot(t, blockOf(dir, pa), func(b *ctl.Block) {
		b.TenantClass = 7
		copy(b.Node[:], "node a b\x00")
	})
	if err := Fence(dir, top); err != nil { // root's carve daemon
		t.Fatal(err)
	}
	recorded(t, dir, pa)
	rewriteRoot(t, blockOf(dir, pa), func(b *ctl.Block) { b.Mask = [4]uint32{} })
	if err := Fence(dir, top); err != nil {
		t.Fatal(err)
	}
	rest := strconv.Itoa(len(top.TPCs) - len(sa))
	b := asUser(t, bin, 65533, append(env[:len(env)-1], "PLACE_COUNT="+rest)...)
	defer func() { b.in.Close(); b.cmd.Wait() }()
	if sb := placedSet(t, "uid 65533 beside the odd block", b.line); overlap(sb, sa) {
		t.Errorf("uid 65533 placed %v over the recorded %v", sb, sa)
	}
}

// TestNodeDirMemoryRaise: in the node directory a user lowers its
// tenant's memory limit but does not raise it (other users would count
// root's record of the lower one while it allocated more), nor by writing
// a raise that fits into its block (root's fence, the GPU's memory
// known, takes none); root raises it, and root's record takes the raise
// at once.
func TestNodeDirMemoryRaise(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	a := asUser(t, bin, 65534, "PLACE_DIR="+dir, "PLACE_TOPOLOGY="+js, "PLACE_HELPER=place", "PLACE_COUNT=8", "PLACE_MEM=2G")
	defer func() { a.in.Close(); a.cmd.Wait() }()
	placedSet(t, "uid 65534", a.line)
	pa := a.cmd.Process.Pid
	if err := Fence(dir); err != nil { // root's carve daemon, which knows no GPU's memory
		t.Fatal(err)
	}
	set := func(uid int, mem string) string {
		h := asUser(t, bin, uid, "PLACE_DIR="+dir, "PLACE_TOPOLOGY="+js, "PLACE_HELPER=setmem", "PLACE_PID="+strconv.Itoa(pa), "PLACE_MEM="+mem)
		h.in.Close()
		h.cmd.Wait()
		return h.line
	}
	if got := set(65534, "4G"); got == "set" {
		t.Errorf("uid 65534 raised its limit in the node directory")
	}
	if got := set(65534, "1G"); got != "set" {
		t.Errorf("uid 65534 lowering its limit: %q", got)
	}
	if err := Fence(dir); err != nil { // the daemon's next pass
		t.Fatal(err)
	}
	if got := recorded(t, dir, pa).Memory.Limit; got != 1<<30 {
		t.Errorf("recorded limit %d after uid 65534 lowered it, want 1 GiB", got)
	}
	rewriteRoot(t, blockOf(dir, pa), func(b *ctl.Block) { b.MemLimit = 2 << 30 }) // as uid 65534 through its mapping
	if err := Fence(dir, top); err != nil {                                       // the daemon's, which knows the GPU's memory
		t.Fatal(err)
	}
	if got := recorded(t, dir, pa).Memory.Limit; got != 1<<30 {
		t.Errorf("recorded limit %d after uid 65534 wrote 2 GiB into its block, want 1 GiB", got)
	}
	if _, err := SetMemory(dir, top, pa, ctl.MemLimit{Bytes: 4 << 30}, false, nil); err != nil {
		t.Fatalf("root raising it: %v", err)
	}
	if got := recorded(t, dir, pa).Memory.Limit; got != 4<<30 {
		t.Errorf("recorded limit %d after root raised it, want 4 GiB at once", got)
	}
}

// TestNodeDirNoFence: while root's fence runs (it touched the records'
// directory within ctl.RecordsFresh) another user's block that root will
// never record (a child of a tenant whose first process ended) holds
// nothing for uid 65533's placement; with no fence running (no carve
// daemon: nothing is recorded) uid 65533's placement, move and memory
// change fail, naming the directory, how long since root's fence and
// sudo carve daemon, and make no block, as does carve run's look once
// its tenant was not recorded (Fresh); root's placement goes on. Root's
// fence touches the records' directory.
func TestNodeDirNoFence(t *testing.T) {
	dir, bin := nodeDir(t)
	top, js := topologyJSON(t)
	procs := sleepers(t, 2)
	first, child := procs[0], procs[1].Process.Pid
	first.Process.Kill()
	first.Wait()
	mask, err := partition.Mask(top, partition.Set{0, 1, 2, 3, 4, 5, 6, 7})
	if err != nil {
		t.Fatal(err)
	}
	h, err := ctl.Create(dir, ctl.Init{PID: child, Tenant: first.Process.Pid, Parts: []ctl.Part{{Mask: mask, Live: top.Live()}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := os.Chown(blockOf(dir, child), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"PLACE_DIR=" + dir, "PLACE_TOPOLOGY=" + js}
	rd := filepath.Join(dir, ctl.TenantRecords)
	age := func(d time.Duration) {
		at := time.Now().Add(-d)
		if err := os.Chtimes(rd, at, at); err != nil {
			t.Fatal(err)
		}
	}
	all := append(env, "PLACE_HELPER=place", "PLACE_COUNT="+strconv.Itoa(len(top.TPCs)-8))
	b := asUser(t, bin, 65533, all...) // fenced: the child's TPCs are free
	defer func() { b.in.Close(); b.cmd.Wait() }()
	placedSet(t, "uid 65533 beside another user's unrecorded child block", b.line)
	pb := strconv.Itoa(b.cmd.Process.Pid)

	age(2 * ctl.RecordsFresh)
	refused := func(what string, h *helper) {
		t.Helper()
		h.in.Close()
		h.cmd.Wait()
		for _, want := range []string{"refused", dir, "for 48h", "sudo carve daemon"} {
			if !strings.Contains(h.line, want) {
				t.Errorf("%s with no fence running: %q does not say %q", what, h.line, want)
			}
		}
	}
	c := asUser(t, bin, 65533, append(env, "PLACE_HELPER=place", "PLACE_COUNT=4")...)
	refused("uid 65533's placement", c)
	if _, err := os.Lstat(blockOf(dir, c.cmd.Process.Pid)); !os.IsNotExist(err) {
		t.Errorf("the refused placement made a block: %v", err)
	}
	refused("uid 65533's move", asUser(t, bin, 65533, append(env, "PLACE_HELPER=move", "PLACE_PID="+pb, "PLACE_COUNT=4")...))
	refused("uid 65533's memory change", asUser(t, bin, 65533, append(env, "PLACE_HELPER=setmem", "PLACE_PID="+pb, "PLACE_MEM=1G")...))
	refused("carve run's look", asUser(t, bin, 65533, append(env, "PLACE_HELPER=fresh")...))
	if _, err := Place(dir, top, Request{Spec: count(t, "1"), PID: os.Getpid(), Share: true}); err != nil {
		t.Errorf("root's placement with no fence running: %v", err)
	}

	age(time.Hour)
	if err := Fence(dir, top); err != nil { // root's carve daemon: a pass
		t.Fatal(err)
	}
	if st, err := os.Stat(rd); err != nil || time.Since(st.ModTime()) > time.Minute {
		t.Errorf("root's fence passed and left the records' directory untouched (%v)", err)
	}
	if h := asUser(t, bin, 65533, append(env, "PLACE_HELPER=fresh")...); h.line != "fresh" {
		t.Errorf("carve run's look after root's fence: %q", h.line)
	}
}

// helperFresh says "fresh", or why a placement in PLACE_DIR is refused
// (Fresh), as carve run looks where its tenant was not recorded.
func helperFresh() {
	if err := Fresh(os.Getenv("PLACE_DIR")); err != nil {
		fmt.Println("refused", err)
	} else {
		fmt.Println("fresh")
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
