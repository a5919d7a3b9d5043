// Package place puts partitions on GPUs so that concurrent starts never
// overlap by accident: reading the live partitions, choosing TPCs and
// registering the new partition's control block happen under one lock per
// runtime directory. A tenant may have a partition on several GPUs: each
// is chosen on its GPU as a tenant of that GPU alone would be, and all are
// registered in one block, or none is. The lock is an flock, which the kernel lets go of when
// its holder dies, so a killed carve never keeps it.
//
// A partition overlaps another only when asked to (Share): a count that
// does not fit in the free TPCs fails and says how many are free; a list
// of TPCs or GPCs that meets a live partition fails and names it. Blocks of
// one tenant (a program and the child processes that copied its block) are
// one partition. Under the same lock the tenants' memory limits are
// counted against the GPU's memory (memory.go). Place knows the live
// partitions from the control blocks alone, so it keeps no state of its own
// and survives any restart.
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
	Mem       uint64        // its memory limit in bytes (0: none)
	MPS       bool          // a client of carve's MPS, whose driver limit holds its context too
}

// PartOn is the partition a block holds on GPU t, if it holds one: by the
// GPU's UUID, which carve records in every block it places, else (a block
// of an older carve) by the GPU's node name, or by the live TPCs, which
// GPUs of one model often share.
func PartOn(s ctl.Snapshot, t *topo.Topology) (ctl.Part, bool) {
	parts := s.Parts()
	if s.GPU != "" {
		for _, p := range parts {
			if SameGPU(p.GPU, t.UUID) {
				return p, true
			}
		}
		return ctl.Part{}, false
	}
	if s.Tide.Node != "" {
		return parts[0], s.Tide.Node == ctl.NodeName(t.UUID)
	}
	return parts[0], s.Live == t.Live()
}

// OnGPU says whether a block holds a partition on GPU t (PartOn).
func OnGPU(s ctl.Snapshot, t *topo.Topology) bool {
	_, ok := PartOn(s, t)
	return ok
}

// SameGPU says whether two UUIDs name one GPU, as the driver's bytes do.
func SameGPU(a, b string) bool {
	ua, ea := ctl.ParseUUID(a)
	ub, eb := ctl.ParseUUID(b)
	if ea != nil || eb != nil {
		return a == b
	}
	return ua == ub
}

// listBlocks and listClaims read the runtime directory: a placement reads
// it once, through here (tests count the reads).
var listBlocks, listClaims = ctl.List, ctl.Claims

// listing is what a placement reads of the runtime directory, once, under
// its lock.
type listing struct {
	blocks  []ctl.Entry // of live processes
	claims  []ctl.Claim
	pending []string // the directories of interrupted reservations
}

func list(dir string) (*listing, error) {
	blocks, err := listBlocks(dir)
	if err != nil {
		return nil, err
	}
	claims, pending, err := listClaims(dir)
	if err != nil {
		return nil, err
	}
	return &listing{blocks: blocks, claims: claims, pending: pending}, nil
}

// partitions are the blocks' snapshots and the claims' reservations, what
// fence reads.
func (l *listing) partitions() []ctl.Snapshot {
	out := make([]ctl.Snapshot, 0, len(l.blocks)+len(l.claims))
	for _, e := range l.blocks {
		out = append(out, e.Snapshot)
	}
	for _, c := range l.claims {
		out = append(out, c.Root)
	}
	return out
}

// Holders are the live partitions on t in dir, one per tenant, then the
// claims reserved on t.
func Holders(dir string, t *topo.Topology) ([]Holder, error) {
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	return l.holders(t), nil
}

func (l *listing) holders(t *topo.Topology) []Holder {
	var out []Holder
	index := map[int]int{}
	for _, e := range l.blocks {
		part, ok := PartOn(e.Snapshot, t)
		if !ok {
			continue // another GPU's partition
		}
		set := partition.FromMask(t, part.Mask)
		i, ok := index[e.Tenant]
		if !ok {
			i = len(out)
			index[e.Tenant] = i
			out = append(out, Holder{Tenant: e.Tenant, Class: e.Class})
		}
		h := &out[i]
		h.PIDs = append(h.PIDs, e.PID)
		h.TPCs = h.TPCs.Union(set)
		h.Floor = h.Floor.Union(partition.FromEnable(t, part.Floor))
		if e.PID == e.Tenant || h.Command == nil {
			h.Command = e.Command
		}
		if e.PID == e.Tenant || h.Mem == 0 { // the account block's limit
			h.Mem = e.Memory.Limit
		}
		h.MPS = h.MPS || e.Flags&ctl.FlagMPS != 0
	}
	for _, c := range l.claims {
		part, ok := PartOn(c.Root, t)
		if !ok {
			continue
		}
		h := Holder{Claim: c.UID, ClaimName: c.Name(), Command: c.Root.Command, TPCs: partition.FromMask(t, part.Mask),
			Class: c.Root.Class, Floor: partition.FromEnable(t, part.Floor), Mem: c.Root.Memory.Limit, MPS: c.Root.Flags&ctl.FlagMPS != 0}
		for _, p := range c.Procs {
			h.PIDs = append(h.PIDs, p.PID)
		}
		out = append(out, h)
	}
	return out
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

// choose resolves r's spec on t around the holders other than r's tenant
// (none for a claim) and returns the set and the partitions it shares TPCs
// with. Without r.Share, any overlap is an error. A best-effort tenant
// yields its TPCs to the others (tide), so it overlaps no one and no one
// overlaps it.
func choose(t *topo.Topology, r Request, holders []Holder) (partition.Set, []Overlap, error) {
	others := held(holders, r.PID)
	var busy partition.Set
	for _, h := range others {
		busy = busy.Union(h.TPCs)
	}
	share := r.Share || r.Policy.Class == ctl.ClassBE
	set, err := r.Spec.Resolve(t, busy)
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
	if r.Spec.Kind == partition.Count {
		return nil, nil, fmt.Errorf("%w: %d TPCs asked for, %d of %d are free (%s); %s",
			ErrOverlap, len(set), free, len(t.TPCs), strings.Join(held, "; "), r.advice())
	}
	var what []string
	for _, o := range overlaps {
		what = append(what, o.String())
	}
	return nil, nil, fmt.Errorf("%w: %s; name free TPCs (%d are free), or add --share to time-share these",
		ErrOverlap, strings.Join(what, "; "), free)
}

// held is the holders other than tenant (claims aside), each with the
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
// at least ctl.NarrowMin of them (as ctl.Policy.Normalize checks).
func chooseFloor(t *topo.Topology, n int, set partition.Set, holders []Holder, tenant int) (topo.Enable, error) {
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
		return topo.Enable{}, fmt.Errorf("%w: a BE floor of %d TPCs asked for, %d of the partition's %d are free of other partitions and BE floors",
			ErrOverlap, n, free, len(set))
	}
	return partition.Enable(t, partition.Pack(t, n, busy))
}

// Request is a partition to place: for a process about to start (a new
// tenant), or for a Kubernetes claim, which holds its TPCs until released,
// whatever runs in it (see ctl.Claim). Its memory limit (Policy.Mem) must
// fit beside the limits of the GPU's other tenants (see MemCharge).
type Request struct {
	Spec   partition.Spec // DefaultSpec gives one a tenant may leave unnamed
	PID    int            // the process; none for a claim
	Claim  *Claim         // the claim to reserve for, if any
	Share  bool           // allow TPCs of live partitions, and over-committing the GPU's memory
	Flags  uint32
	Policy ctl.Policy // its class, tide policy and memory limit
	Comm   []string   // the process's command line (a claim's records its name)
	// More are the tenant's partitions on its other GPUs, each placed on
	// its GPU as Spec is on the first: all of them, or none.
	More []On
}

// On is a partition on one more GPU of a request: the GPU's topology and
// what it names there, and how errors name the GPU ("GPU 1"; "": by its
// UUID).
type On struct {
	Topo *topo.Topology
	Spec partition.Spec
	Name string
}

// advice is what the error of a count that does not fit says to do.
func (r Request) advice() string {
	if r.Claim != nil {
		return "the scheduler counts more free TPCs on this GPU than the node has: do partitions of carve run hold some outside Kubernetes?"
	}
	return "ask for fewer, or add --share to take busy TPCs too"
}

// DefaultSpec is the partition of a tenant of policy p that names none:
// all TPCs for a BE tenant, which yields them to the others; false for
// the rest, which must name one.
func DefaultSpec(p ctl.Policy) (partition.Spec, bool) {
	if p.Class == ctl.ClassBE {
		return partition.Spec{Kind: partition.All, Text: "all"}, true
	}
	return partition.Spec{}, false
}

// Placed is a partition placed and registered: on its first GPU, and
// More on the others.
type Placed struct {
	Set      partition.Set
	Mask     topo.Disable
	Overlaps []Overlap   // with Share: the live partitions it shares TPCs with
	Block    *ctl.Handle // the process's control block (a claim: nil)
	Dir      string      // the claim's directory
	Memory   Memory      // its memory limit and how the GPU's memory stands
	// Again: the claim was reserved before (by this call's earlier attempt,
	// or by a process since restarted); Set is what it got then.
	Again bool
	More  []PlacedOn // on the request's other GPUs, in its order
}

// PlacedOn is the partition placed on one more GPU.
type PlacedOn struct {
	GPU      string // its UUID
	Set      partition.Set
	Mask     topo.Disable
	Overlaps []Overlap
	Memory   Memory
}

// Place chooses r's TPCs on t (and on each GPU of r.More) around the live
// partitions and claims in dir, checks that its memory limit fits beside
// theirs on each GPU, and registers them, all under dir's lock: as
// r.PID's control block, or as r.Claim's directory. A claim already
// reserved gets its partitions back unchanged: reserving is idempotent.
// What an interrupted reservation left is cleared first.
func Place(dir string, t *topo.Topology, r Request) (*Placed, error) {
	if err := r.Policy.Normalize(ctl.FieldNames); err != nil {
		return nil, err
	}
	gpus := append([]On{{Topo: t, Spec: r.Spec}}, r.More...)
	if len(gpus) > ctl.GPUs {
		return nil, fmt.Errorf("partitions on %d GPUs: a tenant has them on %d at most", len(gpus), ctl.GPUs)
	}
	for i, g := range gpus {
		for _, h := range gpus[:i] {
			if SameGPU(g.Topo.UUID, h.Topo.UUID) {
				return nil, fmt.Errorf("%s is named twice", g.name())
			}
		}
	}
	var claimDir string
	if r.Claim != nil {
		var err error
		if claimDir, err = ctl.ClaimDir(dir, r.Claim.UID); err != nil {
			return nil, err
		}
		r.PID, r.Share = 0, false // a claim is no process's and shares no TPCs
	}
	// a share of memory is of the smallest GPU's: the tenant may hold
	// all of its limit on any one
	var limit uint64
	for i, g := range gpus {
		l, err := r.Policy.Mem.Resolve(g.Topo.MemoryBytes)
		if err != nil {
			return nil, g.wrap(err, len(gpus))
		}
		if i == 0 || l < limit {
			limit = l
		}
	}
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	if r.Claim != nil {
		if p, err := r.Claim.again(claimDir, gpus, l); p != nil || err != nil {
			return p, err
		}
	}
	in := ctl.Init{PID: r.PID, Flags: r.Flags, Comm: r.Comm}
	r.Policy.Apply(&in)
	in.MemLimit = limit
	var placed []PlacedOn
	for i, g := range gpus {
		part, on, err := placeOn(g, r, l, limit)
		if err != nil {
			return nil, g.wrap(err, len(gpus))
		}
		placed = append(placed, on)
		if i == 0 {
			in.GPU, in.Mask, in.Live, in.SMs, in.Floor, in.Tide.Node = part.GPU, part.Mask, part.Live, part.SMs, part.Floor, part.Node
		} else {
			in.More = append(in.More, part)
		}
	}
	p := &Placed{Set: placed[0].Set, Mask: placed[0].Mask, Overlaps: placed[0].Overlaps, Dir: claimDir, Memory: placed[0].Memory,
		More: placed[1:]}
	if len(p.More) == 0 {
		p.More = nil
	}
	var made ctl.Snapshot
	if r.Claim != nil {
		made, err = r.Claim.reserve(dir, claimDir, in)
	} else {
		p.Block, err = create(dir, in)
		if err == nil {
			made = p.Block.Snapshot()
		}
	}
	if err != nil {
		return nil, err
	}
	fence(dir, append(l.partitions(), made))
	return p, nil
}

// placeOn chooses r's partition on one GPU, g, around what l holds there:
// its TPCs, its memory limit's fit, its mask and a BE tenant's floor.
func placeOn(g On, r Request, l *listing, limit uint64) (ctl.Part, PlacedOn, error) {
	t := g.Topo
	holders := l.holders(t)
	r.Spec = g.Spec
	set, overlaps, err := choose(t, r, holders)
	if err != nil {
		return ctl.Part{}, PlacedOn{}, err
	}
	mem, err := fitMemory(t, holders, r.PID, limit, r.Flags&ctl.FlagMPS != 0, r.Share, r.memAdvice())
	if err != nil {
		return ctl.Part{}, PlacedOn{}, err
	}
	mask, err := partition.Mask(t, set)
	if err != nil {
		return ctl.Part{}, PlacedOn{}, err
	}
	var floor topo.Enable // none
	if r.Policy.Floor > 0 {
		if floor, err = chooseFloor(t, r.Policy.Floor, set, holders, r.PID); err != nil {
			return ctl.Part{}, PlacedOn{}, err
		}
	}
	// the node block names the GPU; LS and BE tenants meet in it
	part := ctl.Part{GPU: t.UUID, Node: ctl.NodeName(t.UUID), Mask: mask, Live: t.Live(), SMs: SMs(t, set), Floor: floor}
	return part, PlacedOn{GPU: t.UUID, Set: set, Mask: mask, Overlaps: overlaps, Memory: mem}, nil
}

// name is how errors name the GPU.
func (g On) name() string {
	if g.Name != "" {
		return g.Name
	}
	return "GPU " + g.Topo.UUID
}

// wrap names the GPU in err where the request is of several.
func (g On) wrap(err error, gpus int) error {
	if gpus == 1 {
		return err
	}
	return fmt.Errorf("%s: %w", g.name(), err)
}

// create makes the control block in describes in dir, and the node block
// of each of its GPUs for an LS or BE tenant.
func create(dir string, in ctl.Init) (*ctl.Handle, error) {
	if err := openNode(dir, in); err != nil {
		return nil, err
	}
	return ctl.Create(dir, in)
}

// openNode makes the node block of each of in's GPUs, where LS and BE
// tenants meet, if in is an LS or BE tenant's and there is none, and
// frees the slots of ended LS tenants.
func openNode(dir string, in ctl.Init) error {
	if in.Class != ctl.ClassLS && in.Class != ctl.ClassBE {
		return nil
	}
	for _, p := range nodes(in) {
		n, err := ctl.OpenNode(dir, p.Node, p.Live)
		if err != nil {
			return err
		}
		n.Reclaim()
		n.Close()
	}
	return nil
}

// nodes are the partitions of in that name a node block.
func nodes(in ctl.Init) []ctl.Part {
	var out []ctl.Part
	for _, p := range append([]ctl.Part{{GPU: in.GPU, Node: in.Tide.Node, Live: in.Live}}, in.More...) {
		if p.Node != "" {
			out = append(out, p)
		}
	}
	return out
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

// running is the block of pid, a process that still runs.
func running(dir string, pid int) (ctl.Snapshot, error) {
	h, err := ctl.Open(dir, pid)
	if err != nil {
		return ctl.Snapshot{}, err
	}
	snap := h.Snapshot()
	h.Close()
	if !snap.Alive() {
		return ctl.Snapshot{}, fmt.Errorf("process %d has exited", pid)
	}
	return snap, nil
}

// Move gives the tenant of pid (the process carve run started and the
// child processes that copied its block) the partition s on t, one of its
// GPUs, under dir's lock. It applies from each process's next kernel
// launch; its partitions on other GPUs stay.
func Move(dir string, t *topo.Topology, pid int, s partition.Spec, share bool) (*Moved, error) {
	unlock, err := Lock(dir, Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := running(dir, pid)
	if err != nil {
		return nil, err
	}
	part, ok := PartOn(snap, t)
	if !ok {
		return nil, fmt.Errorf("process %d has no partition on %s", pid, t.UUID)
	}
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	set, overlaps, err := choose(t, Request{Spec: s, PID: snap.Tenant, Share: share, Policy: ctl.Policy{Class: snap.Class}}, l.holders(t))
	if err != nil {
		return nil, err
	}
	mask, err := partition.Mask(t, set)
	if err != nil {
		return nil, err
	}
	m := &Moved{Before: partition.FromMask(t, part.Mask), After: set, Overlaps: overlaps}
	for i, e := range l.blocks {
		if e.Tenant != snap.Tenant || !OnGPU(e.Snapshot, t) {
			continue
		}
		b, err := ctl.Open(dir, e.PID)
		if err != nil {
			continue // ended since the listing
		}
		var gen uint64
		if e.GPU == "" { // a block of one GPU, which it does not name
			gen, err = b.SetMask(mask, SMs(t, set))
		} else {
			gen, err = b.SetPartMask(t.UUID, mask, SMs(t, set))
		}
		if err == nil {
			l.blocks[i].Snapshot = b.Snapshot()
		}
		b.Close()
		if err != nil {
			return nil, err
		}
		if e.PID == pid {
			m.Generation = gen
		}
		m.PIDs = append(m.PIDs, e.PID)
	}
	fence(dir, l.partitions())
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
	l, err := list(dir)
	if err != nil {
		return err
	}
	return fence(dir, l.partitions())
}

// fence writes into each node block in dir the TPCs of the partitions
// (parts: what dir holds now) on its GPU that are neither LS nor BE, and
// the BE tenants' floors, so that LS tenants' launches keep off them
// (ctl.Node.SetFixed). Call it under the lock after a change.
func fence(dir string, parts []ctl.Snapshot) error {
	nodes, err := ctl.Nodes(dir)
	if err != nil || len(nodes) == 0 {
		return err
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	for _, n := range nodes {
		live := n.Live()
		var fixed topo.Enable
		for _, s := range parts {
			for _, p := range s.Parts() {
				onNode := p.Node == n.Name() || p.Node == "" && p.Live == live
				switch {
				case !onNode || s.Class == ctl.ClassLS: // an LS tenant's TPCs are its slot's reserved ones
				case s.Class == ctl.ClassBE:
					fixed = fixed.Or(p.Floor.And(live))
				default:
					fixed = fixed.Or(p.Mask.Enable().And(live))
				}
			}
		}
		n.SetFixed(fixed)
	}
	return nil
}
