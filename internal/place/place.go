// Package place puts partitions on one GPU so that concurrent starts never
// overlap by accident: reading the live partitions, choosing TPCs and
// registering the new partition's control block happen under one lock per
// runtime directory. The lock is an flock, which the kernel lets go of when
// its holder dies, so a killed carve never keeps it.
//
// A partition overlaps another only when asked to (Share): a count that
// does not fit in the free TPCs fails and says how many are free; a list
// of TPCs or GPCs that meets a live partition fails and names it. Blocks of
// one tenant (a program and the child processes that copied its block) are
// one partition. Place knows the live partitions from the control blocks
// alone, so it keeps no state of its own and survives any restart.
package place

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// LockFile is the lock's name in the runtime directory; it holds the pid
// of its last holder.
const LockFile = ".place.lock"

// Timeout is how long Lock waits for another holder by default.
var Timeout = 10 * time.Second

// Lock takes dir's placement lock, waiting up to timeout for a holder that
// still runs; unlock lets it go.
func Lock(dir string, timeout time.Duration) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("placement lock: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("placement lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(path)
			f.Close()
			return nil, fmt.Errorf("the placement lock %s is held by pid %s for over %v: is a carve stuck?",
				path, strings.TrimSpace(string(holder)), timeout)
		}
		time.Sleep(wait)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Holder is a live partition on the GPU: one tenant (or claim), its TPCs
// and pids.
type Holder struct {
	Tenant    int
	Claim     string // the UID of the Kubernetes claim it is reserved for
	ClaimName string // its namespace/name
	PIDs      []int  // of a claim: in its containers' namespace
	Command   []string
	TPCs      partition.Set
	Class     uint32
	Floor     partition.Set // a BE tenant's floor, which others keep off
}

// OnGPU says whether a block's partition is on GPU t: by the GPU's node
// name, which carve records in every block it places, else (a block of an
// older carve) by the live TPCs, which GPUs of one model often share.
func OnGPU(s ctl.Snapshot, t *topo.Topology) bool {
	if s.Tide.Node != "" {
		return s.Tide.Node == ctl.NodeName(t.UUID)
	}
	return topo.Mask(s.Live) == t.Live()
}

// Holders are the live partitions on t in dir, one per tenant, then the
// claims reserved on t.
func Holders(dir string, t *topo.Topology) ([]Holder, error) {
	entries, err := ctl.List(dir)
	if err != nil {
		return nil, err
	}
	claims, _, err := ctl.Claims(dir)
	if err != nil {
		return nil, err
	}
	var out []Holder
	index := map[int]int{}
	for _, e := range entries {
		if !OnGPU(e.Snapshot, t) {
			continue // another GPU's partition
		}
		set := partition.FromMask(t, topo.Mask(e.Mask))
		i, ok := index[e.Tenant]
		if !ok {
			i = len(out)
			index[e.Tenant] = i
			out = append(out, Holder{Tenant: e.Tenant, Class: e.Class})
		}
		h := &out[i]
		h.PIDs = append(h.PIDs, e.PID)
		h.TPCs = h.TPCs.Union(set)
		h.Floor = h.Floor.Union(partition.FromMask(t, topo.Mask(e.Floor).Not()))
		if e.PID == e.Tenant || h.Command == nil {
			h.Command = e.Command
		}
	}
	for _, c := range claims {
		if !OnGPU(c.Root, t) {
			continue
		}
		h := Holder{Claim: c.UID, ClaimName: c.Name(), Command: c.Root.Command, TPCs: partition.FromMask(t, topo.Mask(c.Root.Mask)), Class: c.Root.Class}
		for _, p := range c.Procs {
			h.PIDs = append(h.PIDs, p.PID)
		}
		out = append(out, h)
	}
	return out, nil
}

// Overlap is a live partition that shares TPCs with a placement.
type Overlap struct {
	Holder
	Common partition.Set
}

func (o Overlap) String() string {
	if o.Class == ctl.ClassBE {
		return fmt.Sprintf("TPCs %s are the BE floor of %s", o.Common, o.Holder)
	}
	return fmt.Sprintf("TPCs %s are also in the partition of %s", o.Common, o.Holder)
}

// String names the holder: its pid and command, or its claim.
func (h Holder) String() string {
	if h.Claim != "" {
		return "claim " + h.ClaimName
	}
	return fmt.Sprintf("pid %d (%s)", h.Tenant, CommandLine(h.Command, 40))
}

// CommandLine is args joined, cut to width.
func CommandLine(args []string, width int) string {
	s := strings.Join(args, " ")
	if len(s) > width {
		s = s[:width-3] + "..."
	}
	if s == "" {
		s = "?"
	}
	return s
}

// ErrOverlap is wrapped by the errors of placements refused for overlap.
var ErrOverlap = errors.New("partitions would overlap")

// choose resolves spec on t around the holders other than tenant and
// returns the set and the partitions it shares TPCs with. Without share,
// any overlap is an error. A best-effort tenant yields its TPCs to the
// others (tide), so it overlaps no one and no one overlaps it.
func choose(t *topo.Topology, s partition.Spec, holders []Holder, tenant int, share bool, class uint32) (partition.Set, []Overlap, error) {
	return chooseFor(t, s, holders, tenant, share, class, false)
}

// chooseFor is choose, for a Kubernetes claim (whose error advises on
// what else holds the GPU, not on flags) or not.
func chooseFor(t *topo.Topology, s partition.Spec, holders []Holder, tenant int, share bool, class uint32, claim bool) (partition.Set, []Overlap, error) {
	others := held(holders, tenant)
	var busy partition.Set
	for _, h := range others {
		busy = busy.Union(h.TPCs)
	}
	if class == ctl.ClassBE {
		share = true
	}
	set, err := s.Resolve(t, busy)
	if err != nil {
		return nil, nil, err
	}
	var overlaps []Overlap
	for _, h := range others {
		if c := set.Intersect(h.TPCs); len(c) > 0 {
			overlaps = append(overlaps, Overlap{Holder: h, Common: c})
		}
	}
	if len(overlaps) == 0 || share {
		return set, overlaps, nil
	}
	free := len(t.TPCs) - len(busy)
	var held []string
	for _, h := range others {
		held = append(held, fmt.Sprintf("%s holds %s", h, h.TPCs))
	}
	advice := "ask for fewer, or add --share to take busy TPCs too"
	if claim {
		advice = "the scheduler counts more free TPCs on this GPU than the node has: do partitions of carve run hold some outside Kubernetes?"
	}
	if s.Kind == partition.Count {
		return nil, nil, fmt.Errorf("%w: %d TPCs asked for, %d of %d are free (%s); %s",
			ErrOverlap, len(set), free, len(t.TPCs), strings.Join(held, "; "), advice)
	}
	var what []string
	for _, o := range overlaps {
		what = append(what, o.String())
	}
	return nil, nil, fmt.Errorf("%w: %s; name free TPCs (%d are free), or add --share to time-share these",
		ErrOverlap, strings.Join(what, "; "), free)
}

// held is the holders other than tenant (its claims aside), each with the
// TPCs it holds against other placements: a BE tenant only its floor.
// Those that hold none are left out.
func held(holders []Holder, tenant int) []Holder {
	var out []Holder
	for _, h := range holders {
		if h.Claim == "" && h.Tenant == tenant {
			continue
		}
		if h.Class == ctl.ClassBE {
			h.TPCs = h.Floor
		}
		if len(h.TPCs) > 0 {
			out = append(out, h)
		}
	}
	return out
}

// chooseFloor picks a BE tenant's floor: n TPCs of its partition set that
// no other partition holds (LS, plain, or another BE's floor), GPC-packed,
// at least ctl.NarrowMin of them. It returns them as enable bits, the
// floor's form in the control block.
func chooseFloor(t *topo.Topology, n int, set partition.Set, holders []Holder, tenant int) (topo.Mask, error) {
	if n < ctl.NarrowMin {
		return topo.Mask{}, fmt.Errorf("a BE floor of %d TPCs: want at least %d (kernels sized for the whole GPU may never finish on fewer)", n, ctl.NarrowMin)
	}
	var busy partition.Set
	for i := range t.TPCs {
		if !set.Contains(i) {
			busy = append(busy, i)
		}
	}
	for _, h := range held(holders, tenant) {
		busy = busy.Union(h.TPCs)
	}
	if free := len(t.TPCs) - len(busy); n > free {
		return topo.Mask{}, fmt.Errorf("%w: a BE floor of %d TPCs asked for, %d of the partition's %d are free of other partitions and BE floors",
			ErrOverlap, n, free, len(set))
	}
	disable, err := partition.Mask(t, partition.Pack(t, n, busy))
	return disable.Not().And(t.Live()), err
}

// Request is a partition to place for a process about to start.
type Request struct {
	Spec  partition.Spec
	PID   int  // the process; a new tenant
	Share bool // allow TPCs of live partitions
	Flags uint32
	Class uint32   // ctl.ClassLS or ClassBE for tide
	Tide  ctl.Tide // a BE tenant's policy (the node block is found here)
	Comm  []string
}

// Placed is a partition placed and registered.
type Placed struct {
	Set      partition.Set
	Mask     topo.Mask
	Overlaps []Overlap // with Share: the live partitions it shares TPCs with
	Block    *ctl.Handle
}

// Place chooses r's TPCs on t around the live partitions in dir and
// creates r.PID's control block, all under dir's lock.
func Place(dir string, t *topo.Topology, r Request) (*Placed, error) {
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	holders, err := Holders(dir, t)
	if err != nil {
		return nil, err
	}
	set, overlaps, err := choose(t, r.Spec, holders, r.PID, r.Share, r.Class)
	if err != nil {
		return nil, err
	}
	mask, err := partition.Mask(t, set)
	if err != nil {
		return nil, err
	}
	var floor topo.Mask // enable bits; none
	if r.Class == ctl.ClassBE && r.Tide.Floor > 0 {
		if floor, err = chooseFloor(t, r.Tide.Floor, set, holders, r.PID); err != nil {
			return nil, err
		}
	}
	tide := r.Tide
	tide.Node = ctl.NodeName(t.UUID) // names the GPU; LS and BE tenants meet in its block
	if r.Class == ctl.ClassLS || r.Class == ctl.ClassBE {
		n, err := ctl.OpenNode(dir, tide.Node, t.Live())
		if err != nil {
			return nil, err
		}
		n.Reclaim()
		n.Close()
	}
	h, err := ctl.Create(dir, ctl.Init{PID: r.PID, GPU: t.UUID, Mask: mask, Live: t.Live(), SMs: SMs(t, set),
		Flags: r.Flags, Class: r.Class, Tide: tide, Floor: floor, Comm: r.Comm})
	if err != nil {
		return nil, err
	}
	fence(dir) // lists what Holders just listed under the same lock
	return &Placed{Set: set, Mask: mask, Overlaps: overlaps, Block: h}, nil
}

// SMs is the number of SMs of set on t.
func SMs(t *topo.Topology, set partition.Set) int {
	n := 0
	for _, i := range set {
		n += len(t.TPCs[i].SMs)
	}
	return n
}

// Moved is what Move changed.
type Moved struct {
	Before, After partition.Set
	PIDs          []int // the tenant's processes whose blocks were changed
	Generation    uint64
	Overlaps      []Overlap
}

// Move gives the tenant of pid (the process carve run started and the
// child processes that copied its block) the partition s on t, under dir's
// lock. It applies from each process's next kernel launch.
func Move(dir string, t *topo.Topology, pid int, s partition.Spec, share bool) (*Moved, error) {
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	h, err := ctl.Open(dir, pid)
	if err != nil {
		return nil, err
	}
	snap := h.Snapshot()
	h.Close()
	if !snap.Alive() {
		return nil, fmt.Errorf("process %d has exited", pid)
	}
	if !OnGPU(snap, t) {
		return nil, fmt.Errorf("process %d runs on another GPU than the topology given", pid)
	}
	holders, err := Holders(dir, t)
	if err != nil {
		return nil, err
	}
	set, overlaps, err := choose(t, s, holders, snap.Tenant, share, snap.Class)
	if err != nil {
		return nil, err
	}
	mask, err := partition.Mask(t, set)
	if err != nil {
		return nil, err
	}
	m := &Moved{Before: partition.FromMask(t, topo.Mask(snap.Mask)), After: set, Overlaps: overlaps}
	for _, hd := range holders {
		if hd.Tenant != snap.Tenant {
			continue
		}
		for _, p := range hd.PIDs {
			b, err := ctl.Open(dir, p)
			if err != nil {
				continue // ended since the listing
			}
			gen, err := b.SetMask(mask, SMs(t, set))
			b.Close()
			if err != nil {
				return nil, err
			}
			if p == pid {
				m.Generation = gen
			}
			m.PIDs = append(m.PIDs, p)
		}
	}
	fence(dir)
	return m, nil
}

// Fence brings the node blocks' fixed TPCs up to date (see fence) under
// dir's lock: a partition that ended since the last placement no longer
// keeps LS tenants off its TPCs. carve daemon calls it now and then.
func Fence(dir string) error {
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return err
	}
	defer unlock()
	return fence(dir)
}

// fence writes into each node block in dir the TPCs of the partitions on
// its GPU that are neither LS nor BE, and the BE tenants' floors, so that
// LS tenants' launches keep off them (ctl.Node.SetFixed). Call it under
// the lock after a change.
func fence(dir string) error {
	nodes, err := ctl.Nodes(dir)
	if err != nil || len(nodes) == 0 {
		return err
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	entries, err := ctl.List(dir)
	if err != nil {
		return err
	}
	claims, _, err := ctl.Claims(dir)
	if err != nil {
		return err
	}
	parts := make([]ctl.Snapshot, 0, len(entries)+len(claims))
	for _, e := range entries {
		parts = append(parts, e.Snapshot)
	}
	for _, c := range claims {
		parts = append(parts, c.Root)
	}
	for _, n := range nodes {
		live := n.Live()
		var fixed [4]uint32
		for _, p := range parts {
			onNode := p.Tide.Node == n.Name() || p.Tide.Node == "" && p.Live == live
			switch {
			case !onNode || p.Class == ctl.ClassLS: // an LS tenant's TPCs are its slot's reserved ones
			case p.Class == ctl.ClassBE:
				for w := range fixed {
					fixed[w] |= live[w] & p.Floor[w]
				}
			default:
				for w := range fixed {
					fixed[w] |= live[w] &^ p.Mask[w]
				}
			}
		}
		n.SetFixed(fixed)
	}
	return nil
}
