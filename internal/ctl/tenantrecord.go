// Root's record of each tenant of carve run in the node directory: what
// carve made it (its tenant pid, start ticks, user, class, SLO, memory
// limit and partition on each GPU), taken by root's fence from its first
// block the first time it sees it, before its program runs (carve run
// waits for it: place.AwaitSeats), and what carve believes of it
// (Records.Of), never its blocks, which its processes may write.

package ctl

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/carve-gpu/carve/internal/topo"
)

// TenantRecords is the directory, in the node directory, of root's
// record of each tenant of carve run (RecordTenants): root's, mode 0755,
// each record a file of root's, mode 0644, named by the tenant's pid. No
// user makes, changes or removes one, and carve honours only a regular
// file of root's in a directory of root's that no one else may write;
// anything else is skipped and reported (Bad).
const TenantRecords = ".tenants"

// TenantRecord is what carve made a tenant of carve run, as its first
// block (PID == Tenant) said when root first saw it: its process (PID,
// StartTicks), its user (UID, the owner of its blocks), its class and,
// for an LS tenant, its SLO; its memory limit (Mem, 0: none) and its
// partition on each of its GPUs (Parts, as Snapshot.Parts, SMs left out),
// which root's fence changes only where a placement would have allowed
// the change (RecordTenants); its bandwidth share (BW), whose slots are
// its parts' BWOff, which nothing changes after its placement.
type TenantRecord struct {
	PID        int
	StartTicks uint64
	UID        int
	Class      uint32
	SLO        SLO
	Mem        uint64
	BW         BW
	Parts      []Part
}

// recordMax is the most bytes a record may hold: its fields and a part
// line of each of GPUs (partLine: at most 232 bytes).
const recordMax = 320 + GPUs*240

// String is r as its file holds it, one field a line (its bandwidth
// share: millionths, strict (1) or not, slot and epoch in ns), then a line
// of each part: its GPU, node block, mask, live TPCs, floor ("-" for a
// name it has none of) and its bandwidth slot's start in ns.
func (r TenantRecord) String() string {
	class := ClassName(r.Class)
	if class == "" {
		class = "none"
	}
	var b strings.Builder
	strict := 0
	if r.BW.Strict {
		strict = 1
	}
	fmt.Fprintf(&b, "pid %d\nstart %d\nuid %d\nclass %s\nslo %s\nmem %d\nbw %d %d %d %d\n", r.PID, r.StartTicks, r.UID, class, r.SLO, r.Mem,
		uint32(math.Round(r.BW.Share*1e6)), strict, int64(r.BW.Len), int64(r.BW.Epoch))
	for _, p := range r.Parts {
		b.WriteString(partLine(p))
	}
	return b.String()
}

// partLine is p as a record's line.
func partLine(p Part) string {
	name := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return fmt.Sprintf("part %s %s %s %s %s %d\n", name(p.GPU), name(p.Node), p.Mask, p.Live, p.Floor, int64(p.BWOff))
}

// parsePart reads a part as partLine writes it (its "part " cut).
func parsePart(v string) (Part, error) {
	f := strings.Split(v, " ")
	if len(f) != 6 {
		return Part{}, fmt.Errorf("part %q: %d fields, want 6", v, len(f))
	}
	dash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	p := Part{GPU: dash(f[0]), Node: dash(f[1])}
	if p.GPU != "" {
		if _, err := ParseUUID(p.GPU); err != nil {
			return Part{}, err
		}
	}
	var err error
	for i, set := range []func(int){func(b int) { p.Mask = p.Mask.Set(b) }, func(b int) { p.Live = p.Live.Set(b) },
		func(b int) { p.Floor = p.Floor.Set(b) }} {
		if err = parseMask(f[2+i], set); err != nil {
			return Part{}, fmt.Errorf("part %q: %w", v, err)
		}
	}
	off, err := strconv.ParseUint(f[5], 10, 63)
	if err != nil {
		return Part{}, fmt.Errorf("part %q: bandwidth slot: %w", v, err)
	}
	p.BWOff = time.Duration(off)
	return p, nil
}

// parseBW reads a bandwidth share as String writes it (its "bw " cut).
func parseBW(v string) (BW, error) {
	var ppm, strict, n, epoch uint64
	var rest string
	if k, _ := fmt.Sscanf(v+" .", "%d %d %d %d %s", &ppm, &strict, &n, &epoch, &rest); k != 5 || rest != "." || ppm > 1e6 || strict > 1 ||
		n > math.MaxInt64 || epoch > math.MaxInt64 || fmt.Sprintf("%d %d %d %d", ppm, strict, n, epoch) != v {
		return BW{}, fmt.Errorf("bw %q: want millionths, strict (0 or 1), slot and epoch in ns", v)
	}
	return BW{Share: float64(ppm) / 1e6, Strict: strict == 1, Len: time.Duration(n), Epoch: time.Duration(epoch)}, nil
}

// parseMask reads a mask as topo's String writes it, 32 hex digits, the
// highest bits first, calling set with each bit set.
func parseMask(s string, set func(bit int)) error {
	if len(s) != topo.MaskBits/4 {
		return fmt.Errorf("mask %q is not %d hex digits", s, topo.MaskBits/4)
	}
	for i, c := range s {
		d, err := strconv.ParseUint(string(c), 16, 8)
		if err != nil {
			return fmt.Errorf("mask %q: %w", s, err)
		}
		for b := range 4 {
			if d>>b&1 == 1 {
				set((len(s)-1-i)*4 + b)
			}
		}
	}
	return nil
}

// plain is r with what its file cannot hold as it is made plain, so that
// every tenant gets a record (one that could not be written would be
// believed as its blocks say, and could take every TPC later): a class
// carve does not name is none, an SLO out of range none, a GPU that is no
// UUID and a node name that is no word none, a bandwidth share out of
// range none and a slot before the epoch's start at its start. The
// block, which still says otherwise, is reported changed (Changed).
func (r TenantRecord) plain() TenantRecord {
	if ClassName(r.Class) == "" {
		r.Class = ClassNone
	}
	if _, err := ParseSLO(r.SLO.String()); err != nil {
		r.SLO = SLO{}
	}
	if !(r.BW.Share >= 0 && r.BW.Share <= 1) || r.BW.Len < 0 || r.BW.Epoch < 0 {
		r.BW = BW{}
	}
	r.Parts = slices.Clone(r.Parts[:min(len(r.Parts), GPUs)])
	for i := range r.Parts {
		p := &r.Parts[i]
		if _, err := ParseUUID(p.GPU); p.GPU != "" && err != nil {
			p.GPU = ""
		}
		if p.Node == "-" || strings.ContainsFunc(p.Node, func(c rune) bool { return c <= ' ' || c > '~' }) {
			p.Node = ""
		}
		p.BWOff = max(p.BWOff, 0)
	}
	return r
}

// parseRecord reads a record as String writes it: at least one part, at
// most GPUs.
func parseRecord(text string) (TenantRecord, error) {
	var r TenantRecord
	if !strings.HasSuffix(text, "\n") {
		return r, errors.New("no final newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	keys := []string{"pid", "start", "uid", "class", "slo", "mem", "bw"}
	if n := len(lines) - len(keys); n < 1 || n > GPUs {
		return r, fmt.Errorf("%d lines, want %d and a part of each GPU, 1 to %d", len(lines), len(keys), GPUs)
	}
	var err error
	for i, l := range lines {
		k, v, _ := strings.Cut(l, " ")
		if want := "part"; i < len(keys) && k != keys[i] || i >= len(keys) && k != want {
			if i < len(keys) {
				want = keys[i]
			}
			return r, fmt.Errorf("line %d: %q, want %s", i+1, l, want)
		}
		switch k {
		case "pid":
			r.PID, err = strconv.Atoi(v)
		case "start":
			r.StartTicks, err = strconv.ParseUint(v, 10, 64)
		case "uid":
			r.UID, err = strconv.Atoi(v)
		case "class":
			r.Class, err = ParseClass(v)
		case "slo":
			r.SLO, err = ParseSLO(v)
		case "mem":
			r.Mem, err = strconv.ParseUint(v, 10, 64)
		case "bw":
			r.BW, err = parseBW(v)
		case "part":
			var p Part
			p, err = parsePart(v)
			r.Parts = append(r.Parts, p)
		}
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// keepsRecords says whether dir keeps tenant records: a Shared directory
// of root's (the node directory), whose blocks are its users'. A user's
// own directory and carve-dra's keep none.
func keepsRecords(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.Mode()&os.ModeSticky != 0 && nodeDirStat(st).UID == 0
}

// Records are root's tenant records of a runtime directory (ReadRecords),
// by tenant pid. Where none are kept (keepsRecords) Of leaves a block as
// it says.
type Records struct {
	kept    bool      // dir keeps records (keepsRecords)
	fenced  bool      // ... and root's fence touched their directory within RecordsFresh
	touched time.Time // when it last did (zero: never)
	by      map[int]TenantRecord
}

// RecordsFresh is how long after root's fence last touched the records'
// directory (each pass: carve daemon's, every second) carve takes it for
// running: with none running no tenant is recorded, and a user's
// placement there fails (Unfenced). Tests lengthen it, so that a slow
// machine does not make their directories' records stale.
var RecordsFresh = 10 * time.Second

// Unfenced says how long it is since root's fence last touched the
// records (zero where it never did), and whether that is RecordsFresh or
// more in a directory that keeps records (no carve daemon runs there).
func (r Records) Unfenced() (since time.Duration, unfenced bool) {
	if !r.touched.IsZero() {
		since = time.Since(r.touched)
	}
	return since, r.kept && !r.fenced
}

// ReadRecords reads dir's tenant records (TenantRecords) where it keeps
// them (keepsRecords). A directory or file carve does not trust (not root's, a link,
// others may write it) or cannot read is skipped and reported in skipped:
// its tenants are then believed neither LS nor of an SLO.
func ReadRecords(dir string) (r Records, skipped []Bad) {
	r = Records{kept: keepsRecords(dir), by: map[int]TenantRecord{}}
	if !r.kept {
		return r, nil
	}
	rd := filepath.Join(dir, TenantRecords)
	if st, err := os.Lstat(rd); err == nil {
		r.touched = st.ModTime()
		r.fenced = time.Since(r.touched) < RecordsFresh
	}
	des, err := listRootDir("tenant records", rd)
	if err != nil {
		r.fenced = true // a directory carve does not trust: nothing unrecorded is believed
		return r, []Bad{{Path: rd, Reason: "records", Why: err.Error() + ": no tenant of carve run is believed LS", err: err}}
	}
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue // a record being written (.PID.new-*)
		}
		path := filepath.Join(rd, de.Name())
		rec, err := readRecord(path)
		if b, ok := badOf(path, err); ok {
			skipped = append(skipped, b)
			continue
		}
		if err == nil && rec.PID == pid {
			r.by[pid] = rec
		}
	}
	return r, skipped
}

// readRecord reads the tenant record at path: a regular file (no link) of
// root's that parses (parseRecord).
func readRecord(path string) (TenantRecord, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return TenantRecord{}, &Bad{Path: path, Reason: "symlink", Why: fmt.Sprintf("tenant record %s is a symbolic link: not honoured", path), err: err}
		}
		return TenantRecord{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return TenantRecord{}, err
	}
	if !st.Mode().IsRegular() {
		return TenantRecord{}, &Bad{Path: path, Reason: "not-regular", Why: fmt.Sprintf("tenant record %s is not a regular file (%s): not honoured", path, st.Mode().Type())}
	}
	if uid := nodeDirStat(st).UID; uid != 0 {
		return TenantRecord{}, &Bad{Path: path, Reason: "owner", Why: fmt.Sprintf("tenant record %s is owned by %s, not root: not honoured", path, UserName(uid))}
	}
	b, err := io.ReadAll(io.LimitReader(f, recordMax+1))
	if err == nil && len(b) > recordMax {
		err = fmt.Errorf("over %d bytes", recordMax)
	}
	var r TenantRecord
	if err == nil {
		r, err = parseRecord(string(b))
	}
	if err != nil {
		return r, &Bad{Path: path, Reason: "record", Why: fmt.Sprintf("tenant record %s: %v: not honoured", path, err), err: err}
	}
	return r, nil
}

// of is the record of block e's tenant, if it has one that is e's: by its
// tenant pid, of its user (the owner of e's file), and for its first
// block of its process (start ticks).
func (r Records) of(e Entry) (TenantRecord, bool) {
	rec, ok := r.by[e.Tenant]
	if !ok || rec.UID != OwnerOf(e.Path) || e.PID == e.Tenant && e.StartTicks != rec.StartTicks {
		return TenantRecord{}, false
	}
	return rec, true
}

// Recorded says whether block e's tenant has a record of root's (where
// none are kept: true).
func (r Records) Recorded(e Entry) bool {
	_, ok := r.of(e)
	return ok || !r.kept
}

// Of is block e as carve believes it: in the node directory
// (keepsRecords), its class, SLO, memory limit and partitions those of
// its tenant's record, never what the block says, which its processes
// may write (a BE tenant that wrote class LS or an SLO of 10 us would
// hold every other user's BE tenants back; a mask of every TPC or a
// limit of the GPU's memory would stop their placements). A block that
// says LS is LS only where its record says so, else of its record's class
// (none without a record); one that says BE or no class stays so
// (lowering itself harms only itself); an SLO is an LS tenant's of its
// record. A block with no record keeps its memory limit and partitions
// (View says whose are believed). Elsewhere e is left as it says, as
// claims' blocks are believed as their records say (internal/slo's
// claimed).
func (r Records) Of(e Entry) Entry {
	if !r.kept {
		return e
	}
	rec, ok := r.of(e)
	if e.Class == ClassLS {
		e.Class = rec.Class // ClassNone where it has none
	}
	e.Tide.SLO = SLO{}
	if ok && e.Class == ClassLS {
		e.Tide.SLO = rec.SLO
	}
	if ok {
		e.Snapshot = rec.placed(e.Snapshot)
	}
	return e
}

// RecordTenants brings the tenant records of dir up to date with its
// live blocks (blocks): a tenant of carve run with no record, or with one
// of an earlier process of its pid, is recorded from its first block
// (PID == Tenant), where that block's start ticks are its process's, as
// a placement would have allowed it beside the others (Records.believe,
// judge: what every reader believed of it meanwhile); the record of a
// tenant with no live block is removed. Each record is
// written under a temporary name renamed into place, root's, mode 0644,
// into TenantRecords, which it makes (root's, mode 0755) or replaces
// where a user made it first. It does this only where dir keeps records
// (keepsRecords), as root (root's fence); elsewhere it writes nothing.
// A recorded tenant's later change of its memory limit or masks (carve
// set) is taken where a placement would have allowed it (take), else the
// record stays and ReadRecords' Changed reports the block. It returns
// the records it leaves (ReadRecords' where it wrote none), for SeatsOf.
// Call it under the placement lock, with dir's claims and what is known
// of the GPUs' memory (mem).
func RecordTenants(dir string, blocks []Entry, claims []Claim, mem GPUMemory) (Records, error) {
	have, _ := ReadRecords(dir)
	if !have.kept || os.Geteuid() != 0 {
		return have, nil
	}
	rd, err := rootDir(filepath.Join(dir, TenantRecords), "tenant records")
	if err != nil {
		return have, err
	}
	live := map[int]bool{}
	for _, e := range blocks {
		live[e.Tenant] = true
	}
	var errs []error
	judged, _ := have.believe(blocks, claims, mem)
	for _, e := range have.firsts(blocks) {
		rec := judged.by[e.PID]
		if err := writeRecord(rd, rec); err != nil {
			errs = append(errs, fmt.Errorf("recording tenant %d in %s: %w", e.PID, rd, err))
			continue
		}
		have.by[e.PID] = rec
	}
	errs = append(errs, have.takeChanges(rd, blocks, claims, mem)...)
	now := time.Now()
	if err := os.Chtimes(rd, now, now); err == nil { // root's fence runs (RecordsFresh)
		have.fenced, have.touched = true, now
	}
	des, err := os.ReadDir(rd)
	if err != nil {
		return have, errors.Join(append(errs, fmt.Errorf("tenant records: %w", err))...)
	}
	for _, de := range des {
		if pid, err := strconv.Atoi(de.Name()); err != nil || !live[pid] {
			os.RemoveAll(filepath.Join(rd, de.Name())) // ended, or left of a write cut short
			delete(have.by, pid)
		}
	}
	return have, errors.Join(errs...)
}

// writeRecord writes rec into the records directory rd, under a
// temporary name renamed into place, mode 0644.
func writeRecord(rd string, rec TenantRecord) error {
	if back, err := parseRecord(rec.String()); err != nil || !back.equal(rec) {
		return fmt.Errorf("its block's GPU or node names cannot be recorded (%v)", err)
	}
	f, err := os.CreateTemp(rd, "."+strconv.Itoa(rec.PID)+".new-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // past the umask
	if err == nil {
		_, err = f.WriteString(rec.String())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(rd, strconv.Itoa(rec.PID)))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
