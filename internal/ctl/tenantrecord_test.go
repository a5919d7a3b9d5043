// Tests of root's tenant records (tenantrecord.go): what a record holds,
// read back; and the rule of what carve believes of a block's class and
// SLO (Records.Of) in the node directory and outside it.

package ctl

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/topo"
)

// TestTenantRecordRoundTrip: a record reads back as written; one of
// another layout does not parse.
func TestTenantRecordRoundTrip(t *testing.T) {
	uuid := "GPU-72602ec6-1b2d-3c4e-5f60-718293a4b5c6"
	parts := []Part{{GPU: uuid, Node: NodeName(uuid), Mask: topo.Disable{0xff, 1, 0, ^uint32(0)}, Live: topo.Enable{^uint32(0), 3}, Floor: topo.Enable{0xf0}},
		{Mask: topo.Disable{1}}}
	most := TenantRecord{PID: 1 << 30, StartTicks: ^uint64(0), UID: 1 << 30, Class: ClassLS, SLO: SLO{Max: 8 * time.Millisecond}, Mem: ^uint64(0),
		BW: BW{Share: 1, Strict: true, Len: math.MaxInt64, Epoch: math.MaxInt64}}
	for range GPUs {
		most.Parts = append(most.Parts, Part{GPU: uuid, Node: strings.Repeat("n", 64), Mask: topo.Disable{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)},
			Live: topo.Enable{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, Floor: topo.Enable{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, BWOff: math.MaxInt64})
	}
	if n := len(most.String()); n > recordMax {
		t.Errorf("a record of %d parts takes %d bytes, over recordMax (%d)", GPUs, n, recordMax)
	}
	if got, err := parseRecord(most.String()); err != nil || !got.equal(most) {
		t.Errorf("the largest record read back as %+v, %v", got, err)
	}
	for _, r := range []TenantRecord{
		{PID: 12, StartTicks: 345, UID: 65534, Class: ClassLS, SLO: SLO{Max: 8 * time.Millisecond}},
		{PID: 13, StartTicks: 1, UID: 0, Class: ClassLS, SLO: SLO{Alone: 2}},
		{PID: 14, StartTicks: 2, UID: 7, Class: ClassBE},
		{PID: 15, StartTicks: 3, UID: 7},
	} {
		r.Mem, r.Parts = 4<<30, parts
		if r.PID == 14 {
			r.BW = BW{Share: 0.25, Strict: true, Len: 500 * time.Microsecond, Epoch: BWEpoch}
			r.Parts = []Part{parts[0], parts[1]}
			r.Parts[1].BWOff = time.Millisecond
		}
		got, err := parseRecord(r.String())
		if err != nil || !got.equal(r) {
			t.Errorf("%q read back as %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
	const head, part = "pid 1\nstart 1\nuid 1\nclass ls\nslo \nmem 0\nbw 0 0 0 0\n", "part - - 00000000000000000000000000000000 00000000000000000000000000000001 00000000000000000000000000000000 0\n"
	if _, err := parseRecord(head + part); err != nil {
		t.Errorf("%q: %v", head+part, err)
	}
	for _, text := range []string{"", "pid 1\n", "pid x\nstart 1\nuid 1\nclass ls\nslo \n", "pid 1\nstart 1\nuid 1\nclass root\nslo \n",
		"start 1\npid 1\nuid 1\nclass ls\nslo \n", "pid 1\nstart 1\nuid 1\nclass ls\nslo 1us\n",
		"pid 1\nstart 1\nuid 1\nclass ls\nslo \n", head, head + part[:len(part)-1], head + strings.Repeat(part, GPUs+1),
		head + "part - - 0 0 0\n", head + "part GPU-x - " + part[len("part - - "):], head + "part - - " + strings.Repeat("g", 32) + part[len("part - - 00000000000000000000000000000000"):],
		head + "part - -  00000000000000000000000000000000 00000000000000000000000000000001 00000000000000000000000000000000\n",
		strings.Replace(head, "mem 0", "mem -1", 1) + part, head + "mem 0\n" + part,
		strings.Replace(head, "bw 0 0 0 0", "bw 1000001 0 0 0", 1) + part, strings.Replace(head, "bw 0 0 0 0", "bw 0 2 0 0", 1) + part,
		strings.Replace(head, "bw 0 0 0 0", "bw 0 0 0", 1) + part, strings.Replace(head, "bw 0 0 0 0", "bw 0 0 0 0 0", 1) + part,
		strings.Replace(head, "bw 0 0 0 0", "bw 0 0 -1 0", 1) + part, strings.Replace(head, "bw 0 0 0 0", "bw 00 0 0 0", 1) + part,
		strings.Replace(head, "\nbw 0 0 0 0", "", 1) + part, head + part[:len(part)-3] + "\n", head + part[:len(part)-2] + "-1\n"} {
		if r, err := parseRecord(text); err == nil {
			t.Errorf("%q parsed as %+v", text, r)
		}
	}
}

// TestRecordsOf: in the node directory a block is LS, with an SLO, only
// as its tenant's record (of its user, and for a first block of its
// process) says; one that says BE or no class stays so; with no record
// it is of no class. Outside it a block is as it says.
func TestRecordsOf(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "node")
	if err := InitNodeDir(dir, -1); err != nil {
		t.Fatal(err)
	}
	block := func(pid, tenant int, class uint32, uid int) Entry {
		path := filepath.Join(dir, "b"+strconv.Itoa(pid))
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
		e := Entry{Path: path}
		e.PID, e.Tenant, e.StartTicks, e.Class, e.Tide.SLO = pid, tenant, 99, class, SLO{Max: 10 * time.Microsecond}
		return e
	}
	slo := SLO{Max: 5 * time.Millisecond}
	rd := filepath.Join(dir, TenantRecords)
	for _, r := range []TenantRecord{{PID: 100, StartTicks: 99, UID: 65534, Class: ClassLS, SLO: slo}, {PID: 200, StartTicks: 99, UID: 65534, Class: ClassBE}} {
		r.Parts = []Part{{}}
		if err := writeRecord(rd, r); err != nil {
			t.Fatal(err)
		}
	}
	recs, bad := ReadRecords(dir)
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	for _, c := range []struct {
		name  string
		e     Entry
		class uint32
		slo   SLO
	}{
		{"LS, recorded LS", block(100, 100, ClassLS, 65534), ClassLS, slo},
		{"LS child, recorded LS", block(101, 100, ClassLS, 65534), ClassLS, slo},
		{"BE, recorded LS", block(102, 100, ClassBE, 65534), ClassBE, SLO{}},
		{"LS, recorded LS, another user's block", block(103, 100, ClassLS, 65533), ClassNone, SLO{}},
		{"LS, recorded BE", block(200, 200, ClassLS, 65534), ClassBE, SLO{}},
		{"LS child, recorded BE", block(201, 200, ClassLS, 65534), ClassBE, SLO{}},
		{"LS, no record", block(300, 300, ClassLS, 65534), ClassNone, SLO{}},
		{"BE, no record", block(301, 301, ClassBE, 65534), ClassBE, SLO{}},
	} {
		if got := recs.Of(c.e); got.Class != c.class || got.Tide.SLO != c.slo {
			t.Errorf("%s: class %d, SLO %v; want %d, %v", c.name, got.Class, got.Tide.SLO, c.class, c.slo)
		}
	}
	first := block(100, 100, ClassLS, 65534)
	first.StartTicks = 98 // another process of its pid
	if got := recs.Of(first); got.Class != ClassNone {
		t.Errorf("a first block of another process than the record's: class %d, want none", got.Class)
	}

	own := t.TempDir() // a user's own directory: no records
	e := block(400, 400, ClassLS, 65534)
	if mine, _ := ReadRecords(own); mine.Of(e).Class != ClassLS || mine.Of(e).Tide.SLO != e.Tide.SLO || !mine.Recorded(e) {
		t.Error("outside the node directory a block is not as it says")
	}
}

// TestRecordHoldsBandwidthSlots: a tenant's bandwidth share and slots
// are its record's, as placement gave them: a block that rewrote them
// (to take every slot of the epoch, so that no other user's --bw is
// placed) is reported changed and believed as its record says.
func TestRecordHoldsBandwidthSlots(t *testing.T) {
	uuid := "GPU-72602ec6-1b2d-3c4e-5f60-718293a4b5c6"
	var s Snapshot
	s.GPU, s.Tide.Node, s.Mask, s.Live = uuid, NodeName(uuid), topo.Disable{0xff}, topo.Enable{^uint32(0)}
	s.BW, s.BWOff = BW{Share: 0.25, Len: 500 * time.Microsecond, Epoch: BWEpoch}, 500*time.Microsecond
	rec, err := parseRecord(TenantRecord{PID: 12, StartTicks: 3, UID: 7, Class: ClassBE}.as(s).String())
	if err != nil {
		t.Fatal(err)
	}
	if !rec.as(s).equal(rec) {
		t.Fatalf("the block as placed differs from its record read back: %+v", rec)
	}
	w := s
	w.BW, w.BWOff = BW{Share: 1, Len: BWEpoch, Epoch: BWEpoch}, 0
	if rec.as(w).equal(rec) {
		t.Errorf("a block that rewrote its share and slot reads as its record")
	}
	if got := rec.placed(w); got.BW != s.BW || got.Parts()[0].BWOff != s.BWOff {
		t.Errorf("believed with share %+v at %v, want its record's %+v at %v", got.BW, got.Parts()[0].BWOff, s.BW, s.BWOff)
	}
}
