// What a placement reads of the runtime directory, once, under the lock:
// the live blocks and the claims, which GPU each holds a partition on
// (PartOn), and the partitions on one GPU, one per tenant or claim
// (Holder).

package place

import (
	"fmt"
	"os"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/printable"
	"github.com/carve-gpu/carve/internal/topo"
)

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
	BW        ctl.BW        // its bandwidth share (zero: none)
	BWOff     time.Duration // and its slot's start in the epoch on this GPU
	// Outside: of the other side of carve-dra's runtime directory and the
	// node directory (a claim published in the node directory, or the
	// node directory's tenant as a claim's placement sees it), which tide
	// does not reach: no partition shares its TPCs (offOutside).
	Outside bool
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
	blocks  []ctl.Entry // of live processes, as they say
	recs    ctl.Records // root's tenant records (in the node directory)
	claims  []ctl.Claim
	pending []string // the directories of interrupted reservations
	// others are the node directory's tenants, which a claim's placement
	// in carve-dra's runtime directory keeps off (view.tenants)
	others []ctl.Entry
	raise  bool // fence takes a recorded tenant's raise that fits (root's SetMemory: ctl.GPUMemory.Raise)
}

// Fresh fails a placement, move or memory change of a user's in dir
// (place, move and SetMemory call it under the lock; carve run again
// where its tenant was not recorded) where root's fence has not touched
// dir's tenant records within ctl.RecordsFresh (no carve daemon runs):
// then nothing is recorded, so a block made by hand would hold what it
// says for good, and a move would never be taken. Root's carve records
// itself (fence), so its go on; so does any carve outside the node
// directory.
func Fresh(dir string) error {
	recs, _ := ctl.ReadRecords(dir)
	return fresh(dir, recs)
}

// fresh is Fresh of dir's records recs, as read.
func fresh(dir string, recs ctl.Records) error {
	since, unfenced := recs.Unfenced()
	if !unfenced || ctl.WritesNodes(dir) {
		return nil
	}
	when := "ever"
	if since > 0 {
		when = "for " + since.Round(time.Second).String()
	}
	return fmt.Errorf("root's carve daemon has not fenced the node directory %s %s (it does every second): no tenant there is recorded, "+
		"so another user's block would hold what it says, and a placement, move or memory limit of a user but root is refused until it runs: run 'sudo carve daemon'",
		dir, when)
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
	recs, _ := ctl.ReadRecords(dir) // what it skipped, ctl.Read reports
	return &listing{blocks: blocks, recs: recs, claims: claims, pending: pending}, nil
}

// believed are the blocks as this user's carve believes them
// (ctl.Records.View): in the node directory another user's tenant holds
// the TPCs and memory limit of root's record of it (or of what root will
// record, and of a change it is yet to take), not what its blocks say now.
func (l *listing) believed() []ctl.Entry { return l.recs.View(l.blocks, l.claims, os.Geteuid()) }

// partitions are the blocks' snapshots and the claims' reservations, what
// fence reads; and those of the other directory, carve-dra's runtime
// directory's claims published in the node directory (Claim.Published)
// or the node directory's tenants seen from carve-dra's (others), whose
// LS and BE partitions are in the other directory's tide, not in this
// one's: LS tenants here keep off all of their TPCs.
func (l *listing) partitions() []ctl.Snapshot {
	out := make([]ctl.Snapshot, 0, len(l.blocks)+len(l.claims)+len(l.others))
	outside := func(s ctl.Snapshot) ctl.Snapshot {
		if s.Class == ctl.ClassLS || s.Class == ctl.ClassBE {
			s.Class = ctl.ClassNone
		}
		return s
	}
	for _, e := range l.believed() {
		out = append(out, e.Snapshot)
	}
	for _, c := range l.claims {
		if c.Published {
			out = append(out, outside(c.Root))
		} else {
			out = append(out, c.Root)
		}
	}
	for _, e := range l.others {
		out = append(out, outside(e.Snapshot))
	}
	return out
}

// Holders are the live partitions on t in dir, one per tenant, then the
// claims reserved on t (in the node directory: those carve-dra published
// there too).
func Holders(dir string, t *topo.Topology) ([]Holder, error) {
	l, err := list(dir)
	if err != nil {
		return nil, err
	}
	return l.holders(t), nil
}

func (l *listing) holders(t *topo.Topology) []Holder {
	var out []Holder
	type key struct {
		tenant  int
		outside bool
	}
	index := map[key]int{}
	blocks := l.believed()
	for n, e := range append(blocks[:len(blocks):len(blocks)], l.others...) {
		part, ok := PartOn(e.Snapshot, t)
		if !ok {
			continue // another GPU's partition
		}
		set := partition.FromMask(t, part.Mask)
		k := key{e.Tenant, n >= len(blocks)}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Holder{Tenant: e.Tenant, Class: e.Class, Outside: k.outside})
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
		if e.BW.Share > 0 {
			h.BW, h.BWOff = e.BW, part.BWOff
		}
	}
	for _, c := range l.claims {
		part, ok := PartOn(c.Root, t)
		if !ok {
			continue
		}
		h := Holder{Claim: c.UID, ClaimName: c.Name(), Command: c.Root.Command, TPCs: partition.FromMask(t, part.Mask),
			Class: c.Root.Class, Floor: partition.FromEnable(t, part.Floor), Mem: c.Root.Memory.Limit, MPS: c.Root.Flags&ctl.FlagMPS != 0,
			Outside: c.Published, BW: c.Root.BW, BWOff: part.BWOff}
		for _, p := range c.Procs {
			h.PIDs = append(h.PIDs, p.PID)
		}
		out = append(out, h)
	}
	return out
}

// String names the holder: its pid and command, or its claim.
func (h Holder) String() string {
	if h.Claim != "" {
		return "claim " + h.ClaimName
	}
	return fmt.Sprintf("pid %d (%s)", h.Tenant, printable.CommandLine(h.Command, 40))
}
