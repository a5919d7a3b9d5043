package status

import (
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/xid"
)

// TestFaults: clients of MPS that met a fault within the window are one
// group, the one the kernel log names faulted and the other ended beside it;
// a tenant outside MPS is listed on its own.
func TestFaults(t *testing.T) {
	now := time.Date(2026, 11, 23, 1, 19, 20, 0, time.UTC)
	at := func(ms int) string {
		return now.Add(-12*time.Second + time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano)
	}
	fault := func(ms int) *Fault {
		return &Fault{Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Call: "cuCtxSynchronize", At: at(ms)}
	}
	rows := []Row{
		{PID: 10, Command: []string{"loop"}, TPCs: "4-25", MPS: true, Ended: true, Fault: fault(0)},
		{PID: 11, Command: []string{"fault"}, TPCs: "26-43", MPS: true, Ended: true, Fault: fault(20)},
		{PID: 12, Command: []string{"own"}, TPCs: "44-65", Fault: fault(6000)},
	}
	events := []xid.Event{{At: now.Add(-12 * time.Second), Xid: 31, PID: 11, Name: "fault", Message: "MMU Fault: ENGINE GRAPHICS GPC1"}}
	Attribute(rows, events)
	var b strings.Builder
	WriteTable(&b, rows, now, nil)
	out := b.String()
	for _, want := range []string{
		"pid 10 (loop, TPCs 4-25, mps context): CUDA_ERROR_ILLEGAL_ADDRESS at cuCtxSynchronize, 12s ago; ended; ended beside another's fault: pid 11 (fault) faulted: Xid 31",
		"pid 11 (fault, TPCs 26-43, mps context): CUDA_ERROR_ILLEGAL_ADDRESS at cuCtxSynchronize, 12s ago; ended; its kernel faulted (Xid 31: MMU Fault: ENGINE GRAPHICS GPC1)",
		"these 2 MPS clients met the fault together",
		"pid 12 (own, TPCs 44-65, own context): CUDA_ERROR_ILLEGAL_ADDRESS at cuCtxSynchronize, 6s ago; still running\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("fault listing lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "met the fault together") != 1 {
		t.Errorf("the tenant outside MPS was grouped with the MPS clients:\n%s", out)
	}
}
