// Placing a partition: the Request, Place, which chooses it on each of its
// GPUs and registers it as a control block or a claim's reservation, all
// or none, and the node blocks its GPUs' LS and BE tenants meet in.

package place

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

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
	// NodeView, of a claim's placement, says why the node directory's
	// tenants were not all seen or the claim not published there (the
	// claim is placed all the same): see openView.
	NodeView error
	// LockHeld names the process of another user that held the placement
	// lock past PassOver, where the placement went on without it.
	LockHeld string
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
	var kernels *ctl.KernelTable // read before the lock; its path kept whole, for people wherever they ask
	if r.Policy.Kernels != "" {
		var err error
		if r.Policy.Kernels, err = filepath.Abs(r.Policy.Kernels); err != nil {
			return nil, err
		}
		if kernels, err = ctl.ReadKernelTable(r.Policy.Kernels); err != nil {
			return nil, err
		}
	}
	// a user's placement in the node directory goes on past another
	// user's hold of the lock: root's record of it then decides (Lost)
	unlock, held, err := lockPassing(dir, r.Claim == nil && !ctl.WritesNodes(dir))
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	if err := fresh(dir, l.recs); err != nil {
		return nil, err
	}
	v := &view{unlock: func() {}}
	if r.Claim != nil { // beside the node directory's tenants, and published there
		v = openView(dir)
		defer v.unlock()
		l.others = v.tenants()
		if p, err := r.Claim.again(dir, claimDir, gpus, l); p != nil || err != nil {
			if p != nil { // its seats' links, where its directory was made anew
				fence(dir, l, topos(gpus)...)
				v.publish(dir)
				p.NodeView = v.err
			}
			return p, err
		}
	}
	in := ctl.Init{PID: r.PID, Flags: r.Flags, Comm: r.Comm}
	policy := r.Policy
	policy.Mem = ctl.MemLimit{Bytes: limit}
	policy.Apply(&in)
	in.Kernels.Table = kernels
	var placed []PlacedOn
	for _, g := range gpus {
		part, on, err := placeOn(g, r, l, limit)
		if err != nil {
			return nil, g.wrap(err, len(gpus))
		}
		placed = append(placed, on)
		in.Parts = append(in.Parts, part)
	}
	p := &Placed{Set: placed[0].Set, Mask: placed[0].Mask, Overlaps: placed[0].Overlaps, Dir: claimDir, Memory: placed[0].Memory,
		More: placed[1:], LockHeld: held}
	if len(p.More) == 0 {
		p.More = nil
	}
	var made ctl.Snapshot
	blocks, claims := l.blocks, l.claims
	if r.Claim != nil {
		made, err = r.Claim.reserve(dir, claimDir, in)
		claims = append(claims[:len(claims):len(claims)], ctl.Claim{UID: r.Claim.UID, Dir: claimDir, Root: made})
	} else {
		p.Block, err = create(dir, in)
		if err == nil {
			made = p.Block.Snapshot()
			blocks = append(blocks[:len(blocks):len(blocks)], ctl.Entry{Snapshot: made, Path: p.Block.Path})
		}
	}
	if err != nil {
		return nil, err
	}
	if r.Claim != nil {
		v.publish(dir)
		p.NodeView = v.err
	}
	// an LS tenant that got no seat (its shim says so) runs as an
	// ordinary partitioned tenant; another's seat that fails is no
	// reason to refuse this one
	l.blocks, l.claims = blocks, claims
	fence(dir, l, topos(gpus)...)
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
	var bwOff time.Duration
	if r.Policy.BW > 0 {
		var taken []bwSlot
		for _, h := range holders {
			if h.BW.Share > 0 && (h.Tenant == 0 || h.Tenant != r.PID) {
				taken = append(taken, bwSlot{off: h.BWOff, len: h.BW.Len, share: h.BW.Share, strict: h.BW.Strict, holder: h.String()})
			}
		}
		if bwOff, err = chooseBWSlot(r.Policy.BW, r.Policy.BWStrict, taken); err != nil {
			return ctl.Part{}, PlacedOn{}, err
		}
	}
	// the node block names the GPU; LS and BE tenants meet in it
	part := ctl.Part{GPU: t.UUID, Node: ctl.NodeName(t.UUID), Mask: mask, Live: t.Live(), SMs: SMs(t, set), Floor: floor, BWOff: bwOff}
	return part, PlacedOn{GPU: t.UUID, Set: set, Mask: mask, Overlaps: overlaps, Memory: mem}, nil
}

// topos are the topologies of gpus.
func topos(gpus []On) []*topo.Topology {
	out := make([]*topo.Topology, len(gpus))
	for i, g := range gpus {
		out[i] = g.Topo
	}
	return out
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
// frees the slots of ended LS tenants. A user's carve in the node
// directory leaves them to root's carve daemon (ctl.WritesNodes, Fence).
func openNode(dir string, in ctl.Init) error {
	if in.Class != ctl.ClassLS && in.Class != ctl.ClassBE || !ctl.WritesNodes(dir) {
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
	for _, p := range in.Parts {
		if p.Node != "" {
			out = append(out, p)
		}
	}
	return out
}
