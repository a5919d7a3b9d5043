// Tests of Place: concurrent placements, overlaps, tide classes, BE
// floors and a tenant's default partition; and the helper processes and
// the helpers the package's tests share.

package place

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// The test binary doubles as the helper process the tests start: with
// PLACE_HELPER set it places a partition for itself (or takes the lock),
// prints what happened, and stays alive until its stdin closes; it holds
// a block's lock as a shim does for ctltest.HoldLock.
func TestMain(m *testing.M) {
	ctltest.ServeHold()
	ctl.RecordsFresh = 24 * time.Hour // no test's records go stale on a slow machine; those that want them stale age them
	switch os.Getenv("PLACE_HELPER") {
	case "place":
		helperPlace()
	case "lock":
		helperLock()
	case "list":
		helperList()
	case "move":
		helperMove()
	case "setmem":
		helperSetMem()
	case "write":
		helperWrite()
	case "open":
		helperOpen()
	case "fresh":
		helperFresh()
	default:
		if os.Getenv("CARVE_NODE_DIR") == "" { // none: tests that want one make it
			os.Setenv("CARVE_NODE_DIR", "/nonexistent/carve-node-test")
		}
		os.Exit(m.Run())
	}
}

// helperPlace places PLACE_COUNT TPCs of PLACE_TOPOLOGY in PLACE_DIR for
// itself, of the class PLACE_CLASS (ls, be, or none), the memory limit
// PLACE_MEM, the bandwidth share PLACE_BW and a BE tenant's floor of
// PLACE_FLOOR TPCs (none unless set), and stays; it says whose hold of
// the lock it went on past, if it did.
func helperPlace() {
	t, err := topo.Parse([]byte(os.Getenv("PLACE_TOPOLOGY")))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	spec, err := partition.ParseCount(os.Getenv("PLACE_COUNT"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var policy ctl.Policy // PLACE_CLASS: ls, be, or none
	switch os.Getenv("PLACE_CLASS") {
	case "ls":
		policy.Class = ctl.ClassLS
	case "be":
		policy.Class = ctl.ClassBE
	}
	if bw := os.Getenv("PLACE_BW"); bw != "" { // a bandwidth share
		fmt.Sscan(bw, &policy.BW)
	}
	if f := os.Getenv("PLACE_FLOOR"); f != "" { // a BE floor
		fmt.Sscan(f, &policy.Floor)
	}
	if m := os.Getenv("PLACE_MEM"); m != "" { // a memory limit
		policy.Mem, _ = ctl.ParseMemLimit(m)
	}
	p, err := Place(os.Getenv("PLACE_DIR"), t, Request{Spec: spec, PID: os.Getpid(), Comm: []string{"helper"}, Policy: policy})
	switch {
	case err != nil:
		fmt.Println("refused", strings.ReplaceAll(err.Error(), "\n", " "))
	case p.LockHeld != "":
		fmt.Println("placed", p.Set, "past the lock of", p.LockHeld)
	default:
		fmt.Println("placed", p.Set)
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func helperLock() {
	unlock, err := Lock(os.Getenv("PLACE_DIR"), time.Second)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	unlock()
	os.Exit(0)
}

type helper struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	line string
}

func startHelper(t *testing.T, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return runHelper(t, cmd)
}

// runHelper starts cmd, a helper, and reads its first line.
func runHelper(t *testing.T, cmd *exec.Cmd) *helper {
	t.Helper()
	in, line := ctltest.StartLine(t, cmd)
	return &helper{cmd: cmd, in: in, line: line}
}

func topologyJSON(t *testing.T) (*topo.Topology, string) {
	b, err := os.ReadFile(topotest.Path())
	if err != nil {
		t.Fatal(err)
	}
	top, err := topo.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return top, string(b)
}

func count(t *testing.T, n string) partition.Spec {
	t.Helper()
	s, err := partition.ParseCount(n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// placeConcurrently starts n helpers at once, each placing count TPCs
// (with env), and returns what each said.
func placeConcurrently(t *testing.T, dir, count string, n int, env ...string) []string {
	_, js := topologyJSON(t)
	lines := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := startHelper(t, append([]string{"PLACE_HELPER=place", "PLACE_DIR=" + dir, "PLACE_COUNT=" + count, "PLACE_TOPOLOGY=" + js}, env...)...)
			mu.Lock()
			lines[i] = h.line
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lines
}

// TestConcurrentPlacementsNeverOverlap: 64 processes place one TPC each at
// the same moment; each gets its own. Then on another GPU's worth of
// runtime directory, 8 ask for 16 TPCs at once: four fit, four are refused
// with the number still free.
func TestConcurrentPlacementsNeverOverlap(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	seen := map[int]string{}
	for _, l := range placeConcurrently(t, dir, "1", 64) {
		set, ok := strings.CutPrefix(l, "placed ")
		if !ok {
			t.Fatalf("a placement failed: %q", l)
		}
		tpcs, err := partition.ParseList(set)
		if err != nil || len(tpcs) != 1 {
			t.Fatalf("placed %q: %v", set, err)
		}
		if other, dup := seen[tpcs[0]]; dup {
			t.Errorf("TPC %d placed twice (%s and %s)", tpcs[0], other, l)
		}
		seen[tpcs[0]] = l
	}
	holders, err := Holders(dir, top)
	if err != nil || len(holders) != 64 {
		t.Fatalf("%d live partitions registered, want 64: %v", len(holders), err)
	}

	dir = t.TempDir()
	var placed, refused int
	var union partition.Set
	for _, l := range placeConcurrently(t, dir, "16", 8) {
		switch {
		case strings.HasPrefix(l, "placed "):
			tpcs, _ := partition.ParseList(strings.TrimPrefix(l, "placed "))
			if len(union.Intersect(partition.Of(tpcs))) > 0 {
				t.Errorf("%s overlaps an earlier placement (%s)", l, union)
			}
			union = union.Union(partition.Of(tpcs))
			placed++
		case strings.Contains(l, "16 TPCs asked for, 2 of 66 are free") && strings.Contains(l, "--share"):
			refused++
		default:
			t.Errorf("helper said %q", l)
		}
	}
	if placed != 4 || refused != 4 {
		t.Errorf("%d placed and %d refused, want 4 and 4", placed, refused)
	}
}

// sleepers starts n processes that sleep until the test ends: tenants
// whose pids are alive.
func sleepers(t *testing.T, n int) []*exec.Cmd {
	t.Helper()
	procs := make([]*exec.Cmd, n)
	for i := range procs {
		procs[i] = exec.Command("sleep", "30")
		if err := procs[i].Start(); err != nil {
			t.Fatal(err)
		}
		p := procs[i]
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	}
	return procs
}

func TestOverlapNeedsShare(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	// a neighbour process on TPCs 10-19
	nb := sleepers(t, 1)[0]
	spec, _ := partition.ParseTPCs("10-19")
	if _, err := Place(dir, top, Request{Spec: spec, PID: nb.Process.Pid, Comm: []string{"sleep", "30"}}); err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	for _, tc := range []struct {
		spec string
		want string
	}{
		{"t:15-25", "TPCs 15-19 are also in the partition of pid"},
		{"g:1", "TPCs 10-11 are also in the partition"},
		{"t:all", "TPCs 10-19 are also"},
		{"n:60", "60 TPCs asked for, 56 of 66 are free"},
	} {
		kind, text, _ := strings.Cut(tc.spec, ":")
		var s partition.Spec
		switch kind {
		case "t":
			s, _ = partition.ParseTPCs(text)
		case "g":
			s, _ = partition.ParseGPCs(text)
		case "n":
			s, _ = partition.ParseCount(text)
		}
		_, err := Place(dir, top, Request{Spec: s, PID: me})
		if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an overlap error with %q", tc.spec, err, tc.want)
		}
	}
	if _, err := os.Stat(dir + "/" + fmt.Sprint(me)); !os.IsNotExist(err) {
		t.Errorf("a refused placement left a block: %v", err)
	}
	// -n that fits goes around the neighbour; --share may overlap
	s, _ := partition.ParseCount("56")
	p, err := Place(dir, top, Request{Spec: s, PID: me})
	if err != nil || len(p.Set.Intersect(partition.Set{10, 11, 12, 13, 14, 15, 16, 17, 18, 19})) != 0 {
		t.Fatalf("56 TPCs around the neighbour: %v %v", p, err)
	}
	p.Block.Remove()
	p.Block.Close()
	s, _ = partition.ParseTPCs("18-21")
	p, err = Place(dir, top, Request{Spec: s, PID: me, Share: true})
	if err != nil || len(p.Overlaps) != 1 || p.Overlaps[0].Common.String() != "18-19" || p.Overlaps[0].Tenant != nb.Process.Pid {
		t.Fatalf("shared placement: %+v %v", p, err)
	}
	if got := p.Block.Snapshot(); got.SMs != 8 || got.Tenant != me {
		t.Errorf("block records %d SMs and tenant %d, want 8 and %d", got.SMs, got.Tenant, me)
	}
	p.Block.Close()
}

// TestTideClasses: an LS tenant reserves TPCs like any partition; a BE
// tenant overlaps it without --share (it yields them); both are given the
// GPU's node block; a second LS tenant may not take the first's TPCs.
func TestTideClasses(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	procs := sleepers(t, 3)
	n16, _ := partition.ParseCount("16")
	ls, err := Place(dir, top, Request{Spec: n16, PID: procs[0].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := partition.ParseTPCs("all")
	be, err := Place(dir, top, Request{Spec: all, PID: procs[1].Process.Pid,
		Policy: ctl.Policy{Class: ctl.ClassBE, Inflight: 2, Share: 0.05, Epoch: 10 * time.Millisecond}})
	if err != nil || len(be.Set) != 66 || len(be.Overlaps) != 1 {
		t.Fatalf("BE over the LS tenant: %+v %v", be, err)
	}
	s := be.Block.Snapshot()
	if s.Class != ctl.ClassBE || s.Tide.Node != ctl.NodeName(top.UUID) || s.Tide.InflightMax != 2 || s.Tide.Share != 0.05 {
		t.Errorf("BE block: class %d, tide %+v", s.Class, s.Tide)
	}
	if ls.Block.Snapshot().Tide.Node != s.Tide.Node {
		t.Errorf("LS and BE on different node blocks")
	}
	if _, err := os.Stat(filepath.Join(dir, s.Tide.Node)); err != nil {
		t.Errorf("node block: %v", err)
	}
	// a second LS tenant counts the first's TPCs busy, not the BE's
	n51, _ := partition.ParseCount("51")
	if _, err := Place(dir, top, Request{Spec: n51, PID: procs[2].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}}); !errors.Is(err, ErrOverlap) ||
		!strings.Contains(err.Error(), "50 of 66 are free") {
		t.Errorf("a second LS tenant larger than what the first left: %v", err)
	}
	n50, _ := partition.ParseCount("50")
	if p, err := Place(dir, top, Request{Spec: n50, PID: procs[2].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}}); err != nil || len(p.Set.Intersect(ls.Set)) != 0 {
		t.Errorf("a second LS tenant beside the first: %v %v", p, err)
	}
}

// TestBEFloor: a BE tenant's floor is placed off the LS tenants' and plain
// partitions' TPCs and off other BE floors; later partitions keep off it,
// and the node block's fixed names it, so LS tenants' launches do too.
func TestBEFloor(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	procs := sleepers(t, 5)
	n16, _ := partition.ParseCount("16")
	ls, err := Place(dir, top, Request{Spec: n16, PID: procs[0].Process.Pid, Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := partition.ParseTPCs("all")
	beTide := ctl.Policy{Class: ctl.ClassBE, Inflight: 2, Share: 1, Epoch: 10 * time.Millisecond, Floor: 8}
	be, err := Place(dir, top, Request{Spec: all, PID: procs[1].Process.Pid, Policy: beTide})
	if err != nil {
		t.Fatal(err)
	}
	s := be.Block.Snapshot()
	floor := partition.FromEnable(top, s.Floor)
	if len(floor) != 8 || s.Tide.Floor != 8 || len(floor.Intersect(ls.Set)) != 0 {
		t.Fatalf("BE floor %v (%d in the snapshot's policy), want 8 TPCs off the LS tenant's %v", floor, s.Tide.Floor, ls.Set)
	}
	nodes, err := ctl.Nodes(dir)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("node blocks: %v %v", nodes, err)
	}
	defer nodes[0].Close()
	if got := nodes[0].Fixed(); got != s.Floor {
		t.Errorf("node block's fixed %v, want the BE floor %v", got, s.Floor)
	}
	// a plain partition and a second LS tenant keep off the floor
	n43, _ := partition.ParseCount("43")
	if _, err := Place(dir, top, Request{Spec: n43, PID: procs[2].Process.Pid}); !errors.Is(err, ErrOverlap) ||
		!strings.Contains(err.Error(), "42 of 66 are free") {
		t.Errorf("a partition larger than what the LS tenant and the floor leave: %v", err)
	}
	onFloor, _ := partition.ParseTPCs(floor[:2].String())
	if _, err := Place(dir, top, Request{Spec: onFloor, PID: procs[2].Process.Pid}); !errors.Is(err, ErrOverlap) ||
		!strings.Contains(err.Error(), "TPCs "+floor[:2].String()+" are the BE floor of pid") {
		t.Errorf("a partition naming TPCs of the floor: %v", err)
	}
	n10, _ := partition.ParseCount("10")
	plain, err := Place(dir, top, Request{Spec: n10, PID: procs[2].Process.Pid})
	if err != nil || len(plain.Set.Intersect(floor)) != 0 {
		t.Fatalf("a partition beside the floor: %v %v", plain, err)
	}
	// a second BE's floor keeps off the first's and off every partition
	beTide.Floor = 33
	if _, err := Place(dir, top, Request{Spec: all, PID: procs[3].Process.Pid, Policy: beTide}); !errors.Is(err, ErrOverlap) ||
		!strings.Contains(err.Error(), "floor of 33 TPCs asked for, 32 of the partition's 66 are free") {
		t.Errorf("a second BE floor larger than what is free: %v", err)
	}
	beTide.Floor = 4
	if _, err := Place(dir, top, Request{Spec: all, PID: procs[3].Process.Pid, Policy: beTide}); err == nil ||
		!strings.Contains(err.Error(), "floor of 4 TPCs: want at least 8") {
		t.Errorf("a BE floor of 4 TPCs: %v", err)
	}
	beTide.Floor = 8
	be2, err := Place(dir, top, Request{Spec: all, PID: procs[3].Process.Pid, Policy: beTide})
	if err != nil {
		t.Fatal(err)
	}
	floor2 := partition.FromEnable(top, be2.Block.Snapshot().Floor)
	if len(floor2) != 8 || len(floor2.Intersect(floor.Union(ls.Set).Union(plain.Set))) != 0 {
		t.Errorf("second BE floor %v meets the first %v, the LS tenant's or the partition's TPCs", floor2, floor)
	}
	// within the BE's own partition: a few free TPCs and some of the LS tenant's
	used := ls.Set.Union(floor).Union(plain.Set).Union(floor2)
	var mine []int
	for i := range top.TPCs {
		if !used.Contains(i) && len(mine) < 9 {
			mine = append(mine, i)
		}
	}
	part, _ := partition.ParseTPCs(partition.Of(append(mine, ls.Set[:4]...)).String())
	beTide.Floor = 8
	be3, err := Place(dir, top, Request{Spec: part, PID: procs[4].Process.Pid, Policy: beTide})
	if err != nil {
		t.Fatal(err)
	}
	floor3 := partition.FromEnable(top, be3.Block.Snapshot().Floor)
	if len(floor3) != 8 || len(floor3.Intersect(partition.Of(mine))) != 8 {
		t.Errorf("BE floor %v, want 8 of the free TPCs %v of its partition %v", floor3, mine, be3.Set)
	}
	want := s.Floor
	for _, f := range []partition.Set{floor2, floor3, plain.Set} {
		m, _ := partition.Mask(top, f)
		want = want.Or(m.Enable()).And(top.Live())
	}
	if got := nodes[0].Fixed(); got != want {
		t.Errorf("node block's fixed %v, want the floors and the plain partition %v", got, want)
	}
}

// TestDefaultSpec: a BE tenant that names no partition gets every TPC;
// others must name one.
func TestDefaultSpec(t *testing.T) {
	top, _ := topologyJSON(t)
	s, ok := DefaultSpec(ctl.Policy{Class: ctl.ClassBE})
	if set, err := s.Resolve(top, partition.Set{0, 1}); !ok || err != nil || len(set) != 66 {
		t.Errorf("a BE tenant's default: %+v %v -> %v %v", s, ok, set, err)
	}
	for _, c := range []uint32{ctl.ClassLS, ctl.ClassNone} {
		if _, ok := DefaultSpec(ctl.Policy{Class: c}); ok {
			t.Errorf("class %d has a default partition", c)
		}
	}
}
