// Tests of xid.go: an Xid report parsed from a recorded kernel log, and
// this machine's log read.

package xid

import (
	"strings"
	"testing"
	"time"
)

// Recorded on the H100 after an illegal-address write in one MPS client
// beside another (results/h100-580.159.04-2026-11-23/fit/run-1/dmesg-fault.txt),
// as /dev/kmsg gives it, with a line of another driver between.
const kmsg = `6,1201,283982423,-;NVRM: GPU at PCI:0000:00:06: GPU-28697f3e-9cff-a913-b219-b274d00e237a
6,1202,283982434,-;NVRM: GPU Board Serial Number: 1652524111161
4,1203,283982435,-;NVRM: Xid (PCI:0000:00:06): 31, pid=1651, name=fault, channel 0x00000043, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE
6,1204,283990000,-;virtio_net virtio0: link up
4,1205,284100000,-;NVRM: Xid (PCI:0000:00:06): 43, pid='<unknown>', name=<unknown>, Ch 00000008
`

func TestParse(t *testing.T) {
	boot := time.Date(2026, 11, 23, 1, 25, 0, 0, time.UTC)
	ev := Parse(strings.NewReader(kmsg), boot)
	if len(ev) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(ev), ev)
	}
	e := ev[0]
	if e.Xid != 31 || e.Device != "PCI:0000:00:06" || e.PID != 1651 || e.Name != "fault" || !strings.HasPrefix(e.Message, "channel 0x00000043") ||
		!e.At.Equal(boot.Add(283982435*time.Microsecond)) {
		t.Errorf("first event %+v", e)
	}
	if ev[1].Xid != 43 || ev[1].PID != 0 {
		t.Errorf("an Xid without a pid: %+v", ev[1])
	}
	if got, ok := Near(ev, 1651, e.At.Add(-3*time.Second), 5*time.Second); !ok || got.Xid != 31 {
		t.Errorf("Near within 5 s: %+v %v", got, ok)
	}
	if _, ok := Near(ev, 1651, e.At.Add(time.Minute), 5*time.Second); ok {
		t.Error("Near matched a report a minute away")
	}
	if _, ok := Near(ev, 1633, e.At, 5*time.Second); ok {
		t.Error("Near matched another pid")
	}
	// dmesg's own lines carry no record header
	if ev := Parse(strings.NewReader("[  283.982435] NVRM: Xid (PCI:0000:00:06): 13, pid=77, name=python3, Graphics SM Warp Exception\n"), boot); len(ev) != 1 || ev[0].PID != 77 {
		t.Errorf("dmesg line: %+v", ev)
	}
}

// TestRead reads this machine's kernel log: it may be unreadable, never an
// error of another kind.
func TestRead(t *testing.T) {
	if _, err := Read(); err != nil && err != ErrUnreadable && !strings.Contains(err.Error(), "kernel log") {
		t.Errorf("Read: %v", err)
	}
}
