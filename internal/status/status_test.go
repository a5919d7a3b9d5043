// Tests of status.go: faults grouped by MPS server, a Kubernetes claim's
// rows, a BE row's tide text, an LS row's busy periods, and a tenant's
// bandwidth share.

package status

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
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

// TestClaimRows: a Kubernetes claim's processes are listed with the claim,
// and a claim with no process as its reservation.
func TestClaimRows(t *testing.T) {
	rows := []Row{
		{PID: 1, Command: []string{"python3", "serve.py"}, TPCs: "0-15", NumTPCs: 16, SMs: 32, MPS: true, Class: "ls", Claim: "prod/server"},
		{TPCs: "16-37", NumTPCs: 22, SMs: 44, State: "reserved", Claim: "batch/job"},
	}
	var b strings.Builder
	WriteTable(&b, rows, time.Now(), nil)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "1 ") || !strings.HasSuffix(lines[1], "claim prod/server: python3 serve.py") ||
		!strings.HasPrefix(lines[2], "- ") || !strings.Contains(lines[2], "reserved") || !strings.HasSuffix(lines[2], "claim batch/job") {
		t.Errorf("claim rows:\n%s", b.String())
	}
}

// TestTideText: a BE row says where its launches go while LS work is in
// flight when it has a floor, and that it is paused while it is.
func TestTideText(t *testing.T) {
	st := &ctl.TideStatus{State: ctl.TideIdle, Held: 1500 * time.Millisecond, HeldLaunches: 40, NarrowLaunch: 900, Inflight: 3, Kernel: 250 * time.Microsecond}
	withFloor := TideText(Row{Class: "be", Tide: st, Floor: "44-51"})
	if want := "held 1.5s (40 launches), 900 while LS busy on 44-51, 3 in flight, kernels 250µs"; withFloor != want {
		t.Errorf("BE with a floor: %q, want %q", withFloor, want)
	}
	if without := TideText(Row{Class: "be", Tide: st}); strings.Contains(without, " on ") || strings.Contains(without, "cut") {
		t.Errorf("BE without a floor, nothing cut: %q", without)
	}
	st.Sliced, st.SlicePieces = 12, 60
	if got, want := TideText(Row{Class: "be", Tide: st}), ", 3 in flight, kernels 250µs, 12 cut into 60 pieces"; !strings.HasSuffix(got, want) {
		t.Errorf("BE that cut launches: %q, want it to end %q", got, want)
	}
	st.PauseUntil = ctl.Mono() + time.Hour // the SLO controller calibrating
	if got := TideText(Row{Class: "be", Tide: st}); !strings.HasSuffix(got, "; paused by the SLO controller ("+PauseWhy+")") {
		t.Errorf("a paused BE: %q", got)
	}
	st.PauseUntil = ctl.Mono() - time.Millisecond // a pause that ended
	if got := TideText(Row{Class: "be", Tide: st}); strings.Contains(got, "paused") {
		t.Errorf("a BE whose pause ended: %q", got)
	}
}

// periodsHist is a histogram with n periods in the bucket whose bound is
// the first at or above d.
func periodsHist(counts map[time.Duration]uint64) ctl.Hist {
	var h ctl.Hist
	for d, n := range counts {
		i := 0
		for i < ctl.HistBuckets-1 && ctl.HistBound(i) < d {
			i++
		}
		h.Counts[i] += n
		h.Sum += time.Duration(n) * d
	}
	return h
}

// TestLSPeriods: an LS row says its busy periods' p50 and p99, all and
// alone, in its tide text and in JSON.
func TestLSPeriods(t *testing.T) {
	all := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: 50, 8192 * time.Microsecond: 50})
	alone := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: 50})
	r := row(ctl.Entry{Snapshot: ctl.Snapshot{PID: 7, Tenant: 7, Class: ctl.ClassLS,
		TideStatus: ctl.TideStatus{State: ctl.TideIdle, Busy: 512 * time.Millisecond, Requests: 100, Periods: all, Alone: alone}}}, false)
	if want := "busy 512ms over 100 requests, periods p50 2.048ms p99 8.172ms (alone p50 1.92ms p99 2.045ms)"; TideText(r) != want {
		t.Errorf("LS tide text %q, want %q", TideText(r), want)
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"busy_periods":{"count":100,"p50":2048000,"p99":8171520,"alone_count":50,"alone_p50":1920000,"alone_p99":2045440}`; !strings.Contains(string(j), want) {
		t.Errorf("LS row's JSON lacks %s:\n%s", want, j)
	}
	if r := row(ctl.Entry{Snapshot: ctl.Snapshot{PID: 8, Tenant: 8, Class: ctl.ClassLS, TideStatus: ctl.TideStatus{State: ctl.TideIdle}}}, false); !strings.HasSuffix(TideText(r), ", no periods") {
		t.Errorf("LS that served nothing: %q", TideText(r))
	}
}

// TestBWRow: a tenant with a bandwidth share has it in its row, from its
// block (its share, slot and held time), in its tide text, after a BE's,
// and in JSON; a tenant without one has none.
func TestBWRow(t *testing.T) {
	dir := t.TempDir()
	var live topo.Enable
	for i := range 8 {
		live = live.Set(i)
	}
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), BW: ctl.BW{Share: 0.5, Strict: true},
		Parts: []ctl.Part{{Mask: live.Disable(), Live: live, BWOff: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	poke(t, h.Path, unsafe.Offsetof(ctl.Block{}.BWBusyNS), uint64(12*time.Millisecond)) // its gate measured 12 ms of its kernels
	rows, err := List(dir, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v: %v", rows, err)
	}
	r := rows[0]
	want := BW{Share: 0.5, Strict: true, Slot: time.Millisecond, Len: time.Millisecond, Epoch: ctl.BWEpoch, Busy: 12 * time.Millisecond}
	if r.BW == nil || *r.BW != want {
		t.Fatalf("row's bandwidth %+v, want %+v", r.BW, want)
	}
	if got, w := TideText(r), "bw 0.5 strict (1ms at 1ms of 2ms), kernels 12ms, held 0s (0 launches)"; got != w {
		t.Errorf("tide text %q, want %q", got, w)
	}
	be := Row{Class: "be", Tide: &ctl.TideStatus{State: ctl.TideIdle}, BW: r.BW}
	if got := TideText(be); !strings.HasPrefix(got, "held 0s") || !strings.HasSuffix(got, "; bw 0.5 strict (1ms at 1ms of 2ms), kernels 12ms, held 0s (0 launches)") {
		t.Errorf("a BE's tide text with a share: %q", got)
	}
	js, _ := json.Marshal(r)
	if !strings.Contains(string(js), `"bandwidth":{"share":0.5,"strict":true,"slot":1000000,"len":1000000,"epoch":2000000,"held":0,"held_launches":0,"busy":12000000}`) {
		t.Errorf("JSON: %s", js)
	}
	if TideText(Row{}) != "-" {
		t.Errorf("a row with no tide and no share: %q", TideText(Row{}))
	}
}

// TestKernelsRow: a tenant with a kernel table has it in its row, with
// what its shim counted by it, in its tide text (a BE's after its tide
// status, with its launches beside LS work) and in JSON; one without has
// none.
func TestKernelsRow(t *testing.T) {
	dir := t.TempDir()
	var live topo.Enable
	for i := range 8 {
		live = live.Set(i)
	}
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Class: ctl.ClassBE, Kernels: ctl.Kernels{Path: "/t/k.json"},
		Parts: []ctl.Part{{Mask: live.Disable(), Live: live}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// its shim counted 12.5 GB, 3 launches unknown, 7 beside LS work
	for i, v := range []uint64{12_500_000_000, 3, 7} {
		poke(t, h.Path, unsafe.Offsetof(ctl.Block{}.KernelBytes)+uintptr(8*i), v)
	}
	rows, err := List(dir, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v: %v", rows, err)
	}
	r := rows[0]
	want := Kernels{Table: "/t/k.json", KernelStatus: ctl.KernelStatus{Bytes: 12_500_000_000, Unknown: 3, Beside: 7}}
	if r.Kernels == nil || *r.Kernels != want {
		t.Fatalf("row's kernels %+v, want %+v", r.Kernels, want)
	}
	if got := TideText(r); !strings.HasPrefix(got, "off") || !strings.HasSuffix(got, "; dram 12.5 GB by its kernel table, 3 launches unknown, 7 beside LS work") {
		t.Errorf("tide text %q", got)
	}
	if got := TideText(Row{Kernels: r.Kernels}); got != "dram 12.5 GB by its kernel table, 3 launches unknown" {
		t.Errorf("a plain tenant's tide text %q", got)
	}
	js, _ := json.Marshal(r)
	if !strings.Contains(string(js), `"kernels":{"table":"/t/k.json","bytes":12500000000,"unknown":3,"beside":7}`) {
		t.Errorf("JSON: %s", js)
	}
	if rows[0].BW != nil || (Row{}).Kernels != nil {
		t.Error("a row without a table has its kernels")
	}
}
