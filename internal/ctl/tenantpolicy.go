// What carve believes of a recorded tenant's TPCs, memory limit and
// bandwidth share in the node directory: its record's (Records.Of), which
// root's fence changes only where a placement would have allowed the
// change (take; a share and its slots never); whose blocks a reader
// believes (View); and the blocks that say otherwise than their records
// (Changed).

package ctl

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/carve-gpu/carve/internal/topo"
)

// GPUMemory is what root's fence knows of the GPUs' memory: Bytes, a
// GPU's memory by its UUID (0: not known), and Charge, what a limit
// counts against it (place.MemCharge), which a first block's limit must
// fit (judge: where a GPU's memory is not known, it is taken as it says);
// and Raise, whether a recorded tenant's raise that fits is taken (root's
// carve set --mem; a user's, written into its block, is not), never
// where a GPU's memory is not known.
type GPUMemory struct {
	Bytes  func(gpu string) uint64
	Charge func(limit uint64, mps bool) uint64
	Raise  bool
}

// as is r with the memory limit, bandwidth share and partitions of s
// (SMs left out).
func (r TenantRecord) as(s Snapshot) TenantRecord {
	r.Mem, r.BW, r.Parts = s.Memory.Limit, s.BW, nil
	for _, p := range s.Parts() {
		p.SMs = 0
		r.Parts = append(r.Parts, p)
	}
	return r
}

// equal says whether r and o are one record.
func (r TenantRecord) equal(o TenantRecord) bool {
	return r.PID == o.PID && r.StartTicks == o.StartTicks && r.UID == o.UID && r.Class == o.Class && r.SLO == o.SLO &&
		r.Mem == o.Mem && r.BW == o.BW && slices.Equal(r.Parts, o.Parts)
}

// placed is s with r's memory limit, bandwidth share and partitions
// (s's SMs kept where its part is of the record's GPU).
func (r TenantRecord) placed(s Snapshot) Snapshot {
	if len(r.Parts) == 0 {
		return s
	}
	was := s.Parts()
	parts := slices.Clone(r.Parts)
	for i := range parts {
		if i < len(was) && was[i].GPU == parts[i].GPU {
			parts[i].SMs = was[i].SMs
		}
	}
	first := parts[0]
	s.GPU, s.Tide.Node, s.Mask, s.Live, s.SMs, s.Floor, s.BWOff = first.GPU, first.Node, first.Mask, first.Live, first.SMs, first.Floor, first.BWOff
	s.Tide.Floor = first.Floor.Count()
	s.More = nil
	if len(parts) > 1 {
		s.More = parts[1:]
	}
	s.Memory.Limit, s.BW = r.Mem, r.BW
	return s
}

// View is blocks as a reader of user uid believes them (its placements,
// fences and memory sums), beside claims: in the node directory
// (keepsRecords), a block of uid's is as it says (a user's own tenant
// harms only that user's, and a move it just made is not yet recorded);
// another's, as its tenant's record says (Of), with what root's next
// fence will take of a change its first block made since (pending); one
// of a tenant root has not recorded, as root will record it at its next
// fence (believe: its first block judged as a placement, whose start
// ticks are its process's: a block carve run placed a moment ago), else
// not at all (it holds no TPCs or memory: a block of another user's
// under a recorded tenant's pid, or one root will never record). Where
// root's fence has not run within RecordsFresh (no carve daemon: users'
// placements fail, place.Fresh), a block root will never record (a
// tenant's child once its first process ended) is as it says. Elsewhere
// blocks are as they say.
func (r Records) View(blocks []Entry, claims []Claim, uid int) []Entry {
	if !r.kept {
		return blocks
	}
	b, base := r.believe(blocks, claims, GPUMemory{})
	mine := make([]bool, len(blocks)) // uid's blocks, each looked at once
	for i, e := range blocks {
		mine[i] = OwnerOf(e.Path) == uid
		rec, ok := r.of(e)
		if !ok || e.PID != e.Tenant || len(rec.Parts) == 0 || mine[i] {
			continue
		}
		if now := rec.as(e.Snapshot); !now.equal(rec) {
			b.by[e.PID] = pending(rec, now, base, claims)
		}
	}
	out := make([]Entry, 0, len(blocks))
	for i, e := range blocks {
		_, believed := b.of(e)
		switch {
		case mine[i]:
			out = append(out, e)
		case believed:
			out = append(out, b.Of(e))
		case !r.fenced: // no fence running: as it says
			out = append(out, r.Of(e))
		}
	}
	return out
}

// Changed are the blocks among blocks whose memory limit or partitions
// are not as their tenant's record says, reported: another user's
// placements count the record's (a change root's fence did not take, or
// has not taken yet).
func (r Records) Changed(blocks []Entry) []Bad {
	var out []Bad
	for _, e := range blocks {
		rec, ok := r.of(e)
		if !ok || len(rec.Parts) == 0 || rec.as(e.Snapshot).equal(rec) {
			continue
		}
		out = append(out, Bad{Path: e.Path, Reason: "changed", Why: fmt.Sprintf(
			"control block %s: its TPCs or memory limit are not those of root's record of tenant %d (%s): "+
				"not taken (a change onto others' TPCs or past the GPU's memory, or made since root's last fence); other users' placements count the record's",
			e.Path, rec.PID, recordPath(e.Path, rec.PID))})
	}
	return out
}

// recordPath is the path of tenant pid's record beside block.
func recordPath(block string, pid int) string {
	return filepath.Join(filepath.Dir(block), TenantRecords, strconv.Itoa(pid))
}

// takeChanges brings the record of each tenant among blocks, recorded in
// rd, to its first block's memory limit and masks where a placement would
// have allowed the change (take), and writes it.
func (r Records) takeChanges(rd string, blocks []Entry, claims []Claim, mem GPUMemory) []error {
	var errs []error
	_, view := r.believe(blocks, claims, mem)
	for _, e := range blocks {
		rec, ok := r.by[e.PID]
		if e.PID != e.Tenant || !ok || rec.StartTicks != e.StartTicks || len(rec.Parts) == 0 || OwnerOf(e.Path) != rec.UID {
			continue
		}
		next := take(rec, rec.as(e.Snapshot), view, claims, mem)
		if next.equal(rec) {
			continue
		}
		if err := writeRecord(rd, next); err != nil {
			errs = append(errs, fmt.Errorf("recording tenant %d's change in %s: %w", e.PID, rd, err))
			continue
		}
		r.by[e.PID] = next
		_, view = r.believe(blocks, claims, mem)
	}
	return errs
}

// take is rec with what of now (its first block's memory limit and
// partitions) a placement would have allowed, beside the other tenants
// (view: as root believes them) and claims: a mask whose new TPCs none of
// them holds (an LS or plain partition its TPCs, a BE one its floor,
// which others keep off; a BE tenant's mask meets the claims' alone, as
// its placement does), on the same GPUs, live TPCs and floors; a lower
// limit or none; a raise root made (mem.Raise) that fits each of its
// GPUs' memory beside the others' limits. The rest stays as rec says.
func take(rec, now TenantRecord, view []Entry, claims []Claim, mem GPUMemory) TenantRecord {
	next := rec
	next.Parts = slices.Clone(rec.Parts)
	if len(now.Parts) != len(rec.Parts) {
		return next
	}
	for i, p := range now.Parts {
		was := rec.Parts[i]
		if p == was || p.GPU != was.GPU || p.Node != was.Node || p.Live != was.Live || p.Floor != was.Floor {
			continue
		}
		// its TPCs others hold: none but those it held before (a --share
		// placement's, as recorded)
		h := heldBeside(rec, was, view, claims)
		if meets := h.And(p.Mask.Enable()).And(p.Live); meets.And(was.Mask.Enable()) == meets {
			next.Parts[i].Mask = p.Mask
		}
	}
	if fit, _ := fits(rec, now.Mem, view, claims, mem); now.Mem == 0 || rec.Mem != 0 && now.Mem <= rec.Mem || mem.Raise && fit {
		next.Mem = now.Mem
	}
	return next
}

// heldBeside are the TPCs of part's GPU that the tenants of view but rec's, and
// the claims, hold against rec's partition there.
func heldBeside(rec TenantRecord, part Part, view []Entry, claims []Claim) topo.Enable {
	var out topo.Enable
	of := func(s Snapshot) {
		for _, q := range s.Parts() {
			switch {
			case !samePart(q, part):
			case s.Class == ClassBE:
				out = out.Or(q.Floor)
			default:
				out = out.Or(q.Mask.Enable().And(q.Live))
			}
		}
	}
	if rec.Class != ClassBE { // a BE partition may take others' TPCs, not claims'
		for _, e := range view {
			if e.Tenant != rec.PID {
				of(e.Snapshot)
			}
		}
	}
	for _, c := range claims {
		of(c.Root)
	}
	return out
}

// samePart says whether two partitions are on one GPU: by its UUID, else
// its node block's name, else its live TPCs.
func samePart(a, b Part) bool {
	switch {
	case a.GPU != "" || b.GPU != "":
		return a.GPU == b.GPU
	case a.Node != "" || b.Node != "":
		return a.Node == b.Node
	}
	return a.Live == b.Live
}

// fits says whether rec's memory limit as limit fits the memory of each
// of its GPUs (mem) beside the limits of the other tenants of view and
// the claims there, and whether that is known: it does not fit where it
// passes one GPU whose memory mem knows, whatever the others (a GPU no
// driver knows, named first, hides nothing); it fits where mem knows
// every GPU's and it passes none; else neither is known.
func fits(rec TenantRecord, limit uint64, view []Entry, claims []Claim, mem GPUMemory) (fit, known bool) {
	if mem.Bytes == nil || mem.Charge == nil {
		return false, false
	}
	mps := false
	for _, e := range view {
		if e.Tenant == rec.PID && e.Flags&FlagMPS != 0 {
			mps = true
		}
	}
	unknown := false
	for _, part := range rec.Parts {
		total := mem.Bytes(part.GPU)
		if total == 0 {
			unknown = true
			continue
		}
		charged := map[int]uint64{} // by tenant: its account block's limit
		for _, e := range view {
			for _, q := range e.Parts() {
				if e.Tenant != rec.PID && samePart(q, part) && (e.PID == e.Tenant || charged[e.Tenant] == 0) {
					charged[e.Tenant] = mem.Charge(e.Memory.Limit, e.Flags&FlagMPS != 0)
				}
			}
		}
		sum := mem.Charge(limit, mps)
		for _, c := range charged {
			sum += c
		}
		for _, c := range claims {
			for _, q := range c.Root.Parts() {
				if samePart(q, part) {
					sum += mem.Charge(c.Root.Memory.Limit, c.Root.Flags&FlagMPS != 0)
				}
			}
		}
		if sum > total {
			return false, true
		}
	}
	return !unknown, !unknown
}
