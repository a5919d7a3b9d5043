// What root records of a tenant of carve run the first time it sees its
// first block, and what every reader believes of one not yet recorded:
// the block judged as a placement would have judged it (judge), beside
// the tenants root recorded, the claims and the first blocks made before
// it (Records.believe); and, of a recorded tenant whose first block
// changed since root's last fence, its record and what root's next fence
// will take of the change, together (pending).

package ctl

import (
	"cmp"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/carve-gpu/carve/internal/topo"
)

// firsts are the first blocks among blocks (PID == Tenant) whose
// tenants root has not recorded as they run now (no record of the pid, or
// one of an earlier process of it) and whose start ticks are their
// process's: those root's next fence records (RecordTenants). They come
// in the order their files were made, by their change times (a user can
// move its file's later, never earlier), then by pid.
func (r Records) firsts(blocks []Entry) []Entry {
	var out []Entry
	made := map[int]int64{}
	for _, e := range blocks {
		if e.PID != e.Tenant {
			continue
		}
		if rec, ok := r.by[e.PID]; ok && rec.StartTicks == e.StartTicks {
			continue
		}
		ticks, err := StartTicks(e.PID)
		if err != nil || ticks == 0 || ticks != e.StartTicks {
			continue // not its process's: a block's start ticks are its to write
		}
		made[e.PID] = changed(e.Path)
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(made[a.PID], made[b.PID]), cmp.Compare(a.PID, b.PID))
	})
	return out
}

// changed is the change time of the file at path in ns (0 where it has
// none): no user can set it, only move it to now.
func changed(path string) int64 {
	st, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Ctim.Nano()
	}
	return 0
}

// recordOf is the record of e, a tenant's first block, as it says: its
// pid, start ticks, user (the owner of its file), class, an LS tenant's
// SLO, memory limit, bandwidth share and partitions, made plain.
func recordOf(e Entry) TenantRecord {
	rec := TenantRecord{PID: e.PID, StartTicks: e.StartTicks, UID: OwnerOf(e.Path), Class: e.Class}.as(e.Snapshot)
	if rec.Class == ClassLS {
		rec.SLO = e.Tide.SLO
	}
	return rec.plain()
}

// believe is r with a record of each tenant among blocks that root has
// not recorded yet (firsts), as root's next fence will record it: its
// first block judged, in the order of firsts, beside the recorded
// tenants, the claims and the tenants judged before it (judge). It
// returns those records (r's own are not changed) and the blocks as they
// make them believed: each block of a tenant with a record (its own or a
// judged one) as Of has it, the others left out. Root's fence records
// the first blocks so (RecordTenants), and every reader believes them so
// until it has (View): a reader believes exactly what root will record.
func (r Records) believe(blocks []Entry, claims []Claim, mem GPUMemory) (Records, []Entry) {
	b := r
	b.by = make(map[int]TenantRecord, len(r.by))
	for pid, rec := range r.by {
		b.by[pid] = rec
	}
	view := make([]Entry, 0, len(blocks))
	for _, e := range blocks {
		if _, ok := b.of(e); ok {
			view = append(view, b.Of(e))
		}
	}
	for _, f := range r.firsts(blocks) {
		rec := judge(recordOf(f), view, claims, mem)
		b.by[f.PID] = rec
		for _, e := range blocks {
			if _, ok := b.of(e); ok && e.Tenant == f.Tenant {
				view = append(view, b.Of(e))
			}
		}
	}
	return b, view
}

// judge is rec, the record of a tenant's first block as it says
// (recordOf), with what a placement would have allowed it beside the
// other tenants of view (as root believes them), the claims and mem: on
// each of its GPUs, of its TPCs only those none of them holds (an LS or
// plain partition its TPCs, a BE one its floor; a BE tenant's mask meets
// the claims' alone, as its placement does), and of its floor only the
// TPCs none of them holds; a memory limit where it fits beside theirs on
// each GPU whose memory mem knows, else none (a limit that does not fit,
// of a block made by hand or of a --share placement that over-commits
// the memory, counts for nothing, as no limit does); a bandwidth share
// where its slot on each GPU is in the epoch and apart from theirs, with
// their shares at most 1, else none. A placement made under the lock
// beside what the others believe is recorded as it is.
func judge(rec TenantRecord, view []Entry, claims []Claim, mem GPUMemory) TenantRecord {
	rec.Parts = slices.Clone(rec.Parts)
	for i, p := range rec.Parts {
		live := p.Live
		if live == (topo.Enable{}) {
			live = allTPCs
		}
		held := heldBeside(rec, p, view, claims).And(live)
		rec.Parts[i].Mask = p.Mask.Enable().Without(held).Disable()
		floors := heldBeside(TenantRecord{PID: rec.PID}, p, view, claims).And(live)
		rec.Parts[i].Floor = p.Floor.Without(floors)
	}
	if fit, known := fits(rec, rec.Mem, view, claims, mem); rec.Mem != 0 && known && !fit {
		rec.Mem = 0
	}
	if rec.BW.Share > 0 && !slotsApart(rec, view, claims) {
		rec.BW = BW{}
		for i := range rec.Parts {
			rec.Parts[i].BWOff = 0
		}
	}
	return rec
}

// allTPCs are the TPCs of a partition that names no live ones.
var allTPCs = topo.Enable{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}

// slotsApart says whether rec's bandwidth slot on each of its GPUs lies
// in the epoch, apart from the slots of the other tenants of view and
// the claims there, with their shares adding up to 1 at most.
func slotsApart(rec TenantRecord, view []Entry, claims []Claim) bool {
	const slack = 1e-9
	n := rec.BW.Len
	if rec.BW.Epoch != BWEpoch || (n-BWSlot(rec.BW.Share, BWEpoch)).Abs() > time.Microsecond {
		return false // a slot not of its share
	}
	for _, part := range rec.Parts {
		if !inEpoch(part.BWOff, n) {
			return false
		}
		sum := rec.BW.Share
		seen := map[int]bool{}
		meets := func(s Snapshot) bool {
			if !(s.BW.Share > 0) {
				return false
			}
			for _, q := range s.Parts() {
				if samePart(q, part) && inEpoch(q.BWOff, s.BW.Len) { // one of none of the epoch is no slot
					sum += s.BW.Share
					if q.BWOff < part.BWOff+n && part.BWOff < q.BWOff+s.BW.Len {
						return true
					}
				}
			}
			return false
		}
		for _, e := range view {
			if e.Tenant == rec.PID || seen[e.Tenant] {
				continue
			}
			seen[e.Tenant] = true
			if meets(e.Snapshot) {
				return false
			}
		}
		for _, c := range claims {
			if meets(c.Root) {
				return false
			}
		}
		if sum > 1+slack {
			return false
		}
	}
	return true
}

// inEpoch says whether a slot of n from off lies in the epoch.
func inEpoch(off, n time.Duration) bool {
	return off >= 0 && n > 0 && off <= BWEpoch && n <= BWEpoch-off
}

// pending is rec, the record of a tenant whose first block now says
// otherwise (a move or limit carve set made since root's last fence),
// with what root's next fence will take of the change (take, beside the
// tenants of view as root believes them and the claims: no raise, whose
// GPU's memory a reader does not know) added until it does: on each GPU
// the TPCs of both, and the larger limit. A change take refuses (onto
// others' TPCs) adds nothing.
func pending(rec, now TenantRecord, view []Entry, claims []Claim) TenantRecord {
	next := take(rec, now, view, claims, GPUMemory{})
	out := rec
	out.Parts = slices.Clone(rec.Parts)
	for i, p := range next.Parts {
		out.Parts[i].Mask = rec.Parts[i].Mask.Enable().Or(p.Mask.Enable()).Disable()
	}
	out.Mem = max(rec.Mem, next.Mem) // none (0) counts for nothing
	return out
}
