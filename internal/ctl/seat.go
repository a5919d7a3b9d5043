// Seats: carve gives each LS tenant of a GPU a slot of its node block, and
// an LS file of its own there (shim/carve_node.h), after each placement,
// move or release, and each second of carve daemon. The tenant's processes
// write their busy state in the LS file alone; the table is carve's.

package ctl

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/carve-gpu/carve/internal/topo"
)

// Seat is an LS tenant's seat on one GPU: a tenant of carve run (PID, its
// first block's pid in carve's namespace, and StartTicks) or a claim's
// (Claim, its UID), on the node block Node, reserving the TPCs Reserved
// (enable bits), its LS file linked into Dir (the runtime directory, or
// the claim's). UID is a tenant's user, the owner of its control block:
// in a Shared directory its LS file is that user's.
type Seat struct {
	PID        int
	StartTicks uint64
	Claim      string
	Node       string
	Reserved   topo.Enable
	Dir        string
	UID        int
}

// claimKey is what a slot keeps of a claim's UID.
func claimKey(uid string) string {
	if len(uid) > len(NodeSlot{}.Claim)-1 {
		uid = uid[:len(NodeSlot{}.Claim)-1]
	}
	return uid
}

// is says whether slot s is seat t's.
func (t Seat) is(s *NodeSlot) bool {
	switch atomic.LoadUint32(&s.Kind) {
	case SeatTenant:
		return t.Claim == "" && int(s.PID) == t.PID && (t.StartTicks == 0 || s.StartTicks == 0 || s.StartTicks == t.StartTicks)
	case SeatClaim:
		claim, _, _ := strings.Cut(string(s.Claim[:]), "\x00")
		return t.Claim != "" && claim == claimKey(t.Claim)
	}
	return false
}

// link is where a claim's LS file is linked, in its directory ("" for a
// tenant of carve run, whose shim finds its seat in the node block by
// its pid: a link beside the node block, in a directory every user of the
// node directory may write, could be made first by another user, under
// the pid of a tenant to come, which would then get no seat).
func (t Seat) link() string {
	if t.Claim == "" {
		return ""
	}
	return filepath.Join(t.Dir, LSLinkName(t.Node))
}

// Seats gives the LS tenants seats (each on the node block it names, in
// dir) and takes the seats of those no longer among them, in every node
// block of dir: an LS tenant keeps its slot and LS file while it is among
// seats; one that is not has its slot freed and its LS file removed. Call
// it under the placement lock, with every LS tenant of dir. Where the
// caller does not write dir's node blocks (WritesNodes: a user's carve in
// the node directory, where root's carve daemon seats) it does nothing.
func Seats(dir string, seats []Seat) error {
	if !WritesNodes(dir) {
		return nil
	}
	nodes, err := Nodes(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nodes {
		var mine []Seat
		for _, s := range seats {
			if s.Node == n.Name() {
				mine = append(mine, s)
			}
		}
		errs = append(errs, n.seat(mine))
		n.Close()
	}
	return errors.Join(errs...)
}

// seat gives n's seats to seats (seat.go's Seats).
func (n *Node) seat(seats []Seat) error {
	b := n.b
	shared := Shared(filepath.Dir(n.Path))
	has := make([]int, len(seats))
	for k := range has {
		has[k] = -1
	}
	var errs []error
	for i := range b.Slots {
		s := &b.Slots[i]
		if atomic.LoadUint32(&b.Used)&(1<<i) == 0 {
			continue
		}
		k := -1
		for j, t := range seats {
			if has[j] < 0 && t.is(s) {
				k = j
				break
			}
		}
		if k < 0 {
			n.free(i)
			continue
		}
		has[k] = i
		t := seats[k]
		moved := false
		for w := range t.Reserved {
			if atomic.LoadUint32(&s.Reserved[w]) != t.Reserved[w] {
				atomic.StoreUint32(&s.Reserved[w], t.Reserved[w])
				moved = true
			}
		}
		if moved {
			atomic.AddUint32(&b.Gen, 1)
		}
		if t.Claim == "" && shared && t.UID >= 0 {
			errs = append(errs, adoptLS(n.lsPath(i), t.UID))
		}
		if link := t.link(); link != "" {
			if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) { // a claim's directory made anew
				errs = append(errs, os.Link(n.lsPath(i), link))
			}
		}
	}
	for k, t := range seats {
		if has[k] >= 0 {
			continue
		}
		if _, err := n.Give(t); err != nil {
			errs = append(errs, fmt.Errorf("seating an LS tenant in %s: %w", n.Path, err))
		}
	}
	return errors.Join(errs...)
}

// adoptLS makes the LS file path of a tenant's seat in a Shared directory
// its user's (uid), mode LSSharedPerm, where it is not: one a user's carve
// made for another user's tenant before root's alone seated them.
func adoptLS(path string, uid int) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("LS file: %w", err)
	}
	defer f.Close()
	if err := adopt(path, f, uid, -1, LSSharedPerm, 1); err != nil {
		return fmt.Errorf("LS file: %w", err)
	}
	return nil
}

// Seated says whether the tenant of carve run's pid has a seat in n, as
// its LS shim looks for one when it starts (by its tenant's pid).
func (n *Node) Seated(pid int) bool {
	used := atomic.LoadUint32(&n.b.Used)
	for i := range n.b.Slots {
		s := &n.b.Slots[i]
		if used&(1<<i) != 0 && atomic.LoadUint32(&s.Kind) == SeatTenant && int(atomic.LoadUint32(&s.PID)) == pid {
			return true
		}
	}
	return false
}

// free takes slot i back: its LS file goes (a claim's link with its
// directory).
func (n *Node) free(i int) {
	b := n.b
	path := n.lsPath(i)
	atomic.AndUint32(&b.Used, ^(uint32(1) << i))
	atomic.StoreUint32(&b.Slots[i].Kind, SeatFree)
	atomic.StoreUint32(&b.Slots[i].PID, 0)
	atomic.AddUint32(&b.Gen, 1)
	os.Remove(path)
}

// Give seats t in a free slot, with a new LS file (linked into a claim's
// directory), and returns the slot. The file's serial is random, so that
// no one who may write in the GPU's directory can make its name first. In
// a Shared directory a tenant's LS file is its user's (t.UID), mode
// LSSharedPerm. Seats calls it for each LS tenant not yet seated; call it
// under the placement lock, on a block mapped for writing.
func (n *Node) Give(t Seat) (int, error) {
	b := n.b
	if n.ro {
		return -1, fmt.Errorf("node block %s: mapped read-only", n.Path)
	}
	i := -1
	for j := range b.Slots {
		if atomic.LoadUint32(&b.Used)&(1<<j) == 0 {
			i = j
			break
		}
	}
	if i < 0 {
		return -1, fmt.Errorf("all %d slots are taken", NodeSlots)
	}
	perm, uid := os.FileMode(0o600), -1
	switch {
	case t.Claim != "":
		perm = 0o666 // the claim's pod, of any uid; the others get the GPU's directory read-only
	case Shared(filepath.Dir(n.Path)):
		perm, uid = LSSharedPerm, t.UID // its tenant writes it, BE tenants of every user read it
	}
	serial, path := uint32(0), ""
	for tries := 0; serial == 0; tries++ {
		var r [4]byte
		if _, err := rand.Read(r[:]); err != nil || tries == 8 {
			return -1, fmt.Errorf("no free name for an LS file in %s", n.Path+NodeDirSuffix)
		}
		serial = binary.LittleEndian.Uint32(r[:])
		path = filepath.Join(n.Path+NodeDirSuffix, LSFileName(i, serial))
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			serial = 0 // taken
		}
	}
	if err := makeFile(path, perm, uid, LSSize, func(mem []byte) {
		f := (*LSFile)(unsafe.Pointer(&mem[0]))
		f.Magic, f.Version, f.Size, f.Slot = LSMagic, NodeVersion, LSSize, uint32(i)
	}); err != nil {
		return -1, err
	}
	if link := t.link(); link != "" {
		os.Remove(link) // of the claim's seat before
		if err := os.Link(path, link); err != nil {
			os.Remove(path)
			return -1, err
		}
	}
	s := &b.Slots[i]
	kind, pid := uint32(SeatTenant), uint32(t.PID)
	s.Claim = [24]byte{}
	if t.Claim != "" {
		kind, pid = SeatClaim, 0
		copy(s.Claim[:], claimKey(t.Claim))
	}
	atomic.StoreUint32(&s.PID, pid)
	atomic.StoreUint64(&s.StartTicks, t.StartTicks)
	atomic.StoreUint32(&s.Serial, serial)
	for w := range t.Reserved {
		atomic.StoreUint32(&s.Reserved[w], t.Reserved[w])
	}
	atomic.StoreUint32(&s.Kind, kind)
	atomic.OrUint32(&b.Used, 1<<i)
	atomic.AddUint32(&b.Gen, 1)
	return i, nil
}

// OwnerOf is the uid that owns the file path (not a link's target), or -1.
func OwnerOf(path string) int {
	st, err := os.Lstat(path)
	if err != nil {
		return -1
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

// SeatsOf are the seats of the LS tenants among blocks (of live processes
// in dir, one seat a tenant and GPU) and claims: a block's tenant is LS,
// and reserves TPCs, as carve believes it (recs.Of: in the node
// directory, as root's record says; recs are dir's, ReadRecords or
// RecordTenants), a claim's as its record says.
func SeatsOf(dir string, recs Records, blocks []Entry, claims []Claim) []Seat {
	var out []Seat
	index := map[[2]string]int{}
	for _, e := range blocks {
		if e = recs.Of(e); e.Class != ClassLS { // its TPCs too: its record's
			continue
		}
		tenant := e.Tenant
		if tenant == 0 {
			tenant = e.PID
		}
		for _, p := range e.Parts() {
			if p.Node == "" {
				continue
			}
			key := [2]string{fmt.Sprint(tenant), p.Node}
			k, ok := index[key]
			if !ok {
				k = len(out)
				index[key] = k
				out = append(out, Seat{PID: tenant, Node: p.Node, Reserved: p.Mask.Enable().And(p.Live), Dir: dir, UID: OwnerOf(e.Path)})
			}
			if e.PID == tenant {
				out[k].StartTicks = e.StartTicks
				out[k].Reserved = p.Mask.Enable().And(p.Live)
				out[k].UID = OwnerOf(e.Path)
			}
		}
	}
	for _, c := range claims {
		if c.Root.Class != ClassLS || c.Published { // seated in carve-dra's runtime directory
			continue
		}
		for _, p := range c.Root.Parts() {
			if p.Node != "" {
				out = append(out, Seat{Claim: c.UID, Node: p.Node, Reserved: p.Mask.Enable().And(p.Live), Dir: c.Dir})
			}
		}
	}
	return out
}
