// Go's mirrors of the shim's headers against the headers, as the C
// compiler lays them out (shim/test/layout.c, through shimtest.Layout):
// Block and BlockPart against shim/carve_ctl.h, NodeBlock, NodeSlot,
// LSFile, LSProc and BEFile against shim/carve_node.h, and the constants and fault names of both.
// The shim is compiled from the headers and cannot differ from them; the
// Go copy can, so these tests are ctl's.

package ctl_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// compareLayout checks that typ mirrors the C struct c field by field.
func compareLayout(t testing.TB, c map[string][2]uintptr, typ reflect.Type, size uintptr) {
	t.Helper()
	if c["sizeof"][0] != size || typ.Size() != size {
		t.Fatalf("%s: sizes C %d, Go %d, const %d", typ, c["sizeof"][0], typ.Size(), size)
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := f.Tag.Get("c")
		cf, ok := c[name]
		if !ok {
			t.Errorf("Go field %s.%s (c:%q) has no C counterpart", typ, f.Name, name)
			continue
		}
		if cf[0] != f.Offset || cf[1] != f.Type.Size() {
			t.Errorf("%s.%s: C offset %d size %d, Go offset %d size %d", typ, name, cf[0], cf[1], f.Offset, f.Type.Size())
		}
		delete(c, name)
	}
	delete(c, "sizeof")
	for name := range c {
		t.Errorf("C field %s has no Go counterpart in %s", name, typ)
	}
}

func TestLayoutMatchesHeader(t *testing.T) {
	fields, faults := shimtest.Layout(t)
	compareLayout(t, fields[""], reflect.TypeFor[ctl.Block](), ctl.Size)
	compareLayout(t, fields["part"], reflect.TypeFor[ctl.BlockPart](), 128)
	compareLayout(t, fields["hist"], reflect.TypeFor[ctl.BlockHist](), 872)
	compareLayout(t, fields["kernhead"], reflect.TypeFor[ctl.KernHead](), 16)
	compareLayout(t, fields["kernentry"], reflect.TypeFor[ctl.KernEntry](), 24)
	if !reflect.DeepEqual(faults, ctl.FaultNames) {
		t.Errorf("CARVE_FAULTS %v, Go's FaultNames %v", faults, ctl.FaultNames)
	}
}

func TestNodeLayoutMatchesHeader(t *testing.T) {
	fields, _ := shimtest.Layout(t)
	compareLayout(t, fields["node"], reflect.TypeFor[ctl.NodeBlock](), ctl.NodeSize)
	compareLayout(t, fields["slot"], reflect.TypeFor[ctl.NodeSlot](), 64)
	compareLayout(t, fields["ls"], reflect.TypeFor[ctl.LSFile](), ctl.LSSize)
	compareLayout(t, fields["lsproc"], reflect.TypeFor[ctl.LSProc](), 64)
	compareLayout(t, fields["be"], reflect.TypeFor[ctl.BEFile](), ctl.BESize)
}

func TestConstantsMatchHeaders(t *testing.T) {
	fields, _ := shimtest.Layout(t)
	for name, goValue := range map[string]uint64{
		"CARVE_CTL_MAGIC": ctl.Magic, "CARVE_CTL_VERSION": ctl.Version, "CARVE_CTL_SIZE": ctl.Size, "CARVE_GPUS": ctl.GPUs,
		"CARVE_NODE_MAGIC": ctl.NodeMagic, "CARVE_NODE_VERSION": ctl.NodeVersion, "CARVE_NODE_SIZE": ctl.NodeSize,
		"CARVE_NODE_SLOTS": ctl.NodeSlots, "CARVE_NODE_LEASE_NS": uint64(ctl.NodeLease), "CARVE_NODE_QUIET_NS": uint64(ctl.NodeQuiet), "CARVE_NODE_TIMING_NS": uint64(ctl.NodeTiming),
		"CARVE_NODE_NARROW_MIN": ctl.NarrowMin,
		"CARVE_LS_PROC_LOCK(5)": uint64(ctl.LSProcLock(5)),
		"CARVE_LS_MAGIC":        ctl.LSMagic, "CARVE_LS_SIZE": ctl.LSSize, "CARVE_LS_PROCS": ctl.LSProcs,
		"CARVE_BE_MAGIC": ctl.BEMagic, "CARVE_BE_SIZE": ctl.BESize, "CARVE_NODE_BE_FILES": ctl.NodeBEFiles,
		"CARVE_SEAT_FREE": ctl.SeatFree, "CARVE_SEAT_TENANT": ctl.SeatTenant, "CARVE_SEAT_CLAIM": ctl.SeatClaim,
		"CARVE_FLAG_ALLOW_UNPARTITIONED": ctl.FlagAllowUnpartitioned, "CARVE_FLAG_ALL_SMS": ctl.FlagAllSMs,
		"CARVE_FLAG_MPS": ctl.FlagMPS, "CARVE_FLAG_LS_OWN": ctl.FlagLSOwn,
		"CARVE_STATE_NEW": ctl.StateNew, "CARVE_STATE_HOOKED": ctl.StateHooked,
		"CARVE_STATE_UNHOOKED": ctl.StateUnhooked, "CARVE_STATE_NO_DRIVER": ctl.StateNoDriver,
		"CARVE_CLASS_NONE": ctl.ClassNone, "CARVE_CLASS_LS": ctl.ClassLS, "CARVE_CLASS_BE": ctl.ClassBE,
		"CARVE_EPOCH_NS": uint64(ctl.DefaultPolicy.Epoch), "CARVE_PAUSE_MAX_NS": uint64(ctl.PauseMax),
		"CARVE_KERN_MAGIC": ctl.KernMagic, "CARVE_KERN_MAX": ctl.MaxKernels, "CARVE_KERN_COMPUTE": ctl.KernCompute,
		"CARVE_BW_STRICT": ctl.BWStrict, "CARVE_BW_EPOCH_NS": uint64(ctl.BWEpoch),
		"CARVE_HIST_BUCKETS": ctl.HistBuckets,
		"CARVE_TIDE_OFF":     ctl.TideOff, "CARVE_TIDE_IDLE": ctl.TideIdle, "CARVE_TIDE_BUSY": ctl.TideBusy, "CARVE_TIDE_HELD": ctl.TideHeld,
	} {
		c, ok := fields["const"][name]
		if !ok {
			t.Errorf("%s: not printed by the layout program", name)
		} else if uint64(c[0]) != goValue {
			t.Errorf("%s: C %d, Go %d", name, c[0], goValue)
		}
	}
}

func TestHistBoundsMatchHeader(t *testing.T) {
	fields, _ := shimtest.Layout(t)
	for i := range ctl.HistBuckets - 1 {
		name := fmt.Sprintf("CARVE_HIST_BOUND_NS(%d)", i)
		c, ok := fields["const"][name]
		if !ok {
			t.Errorf("%s: not printed by the layout program", name)
		} else if uint64(c[0]) != uint64(ctl.HistBound(i)) {
			t.Errorf("%s: C %d, Go %d", name, c[0], ctl.HistBound(i))
		}
	}
	if _, ok := fields["const"][fmt.Sprintf("CARVE_HIST_BOUND_NS(%d)", ctl.HistBuckets-1)]; ok {
		t.Errorf("the layout program prints a bound for the last bucket, which has none")
	}
}
