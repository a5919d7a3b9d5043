// Tests of marked.go: an LS row's marked requests, in carve ls's text, in
// JSON and against its SLO, and over carve top's interval.

package status

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestMarkedRow: an LS tenant with a mark says its marked requests' p50,
// p99 and count after its busy periods, with the share within its SLO's
// target, and why there are none where there are none; one without a mark
// says nothing of them.
func TestMarkedRow(t *testing.T) {
	marked := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: 95, 8192 * time.Microsecond: 5})
	ls := func(mark string, slo ctl.SLO, ts ctl.TideStatus) Row {
		ts.State = ctl.TideIdle
		return row(ctl.Entry{Snapshot: ctl.Snapshot{PID: 7, Tenant: 7, Class: ctl.ClassLS, Tide: ctl.Tide{Mark: mark, SLO: slo}, TideStatus: ts}}, false)
	}
	r := ls("request", ctl.SLO{Max: 4 * time.Millisecond}, ctl.TideStatus{Marked: marked, MarkState: ctl.MarkAttached, MarkDropped: 2})
	p50, p99 := marked.Quantile(0.5), marked.Quantile(0.99) // ctl's tests check these
	want := fmt.Sprintf(`; requests "request" p50 %v p99 %v of 100, 95.0%% within 4ms, 2 not timed (nested too deep or too many open)`,
		roundPeriod(p50), roundPeriod(p99))
	if got := TideText(r); !strings.HasSuffix(got, want) {
		t.Errorf("tide text %q, want it to end %q", got, want)
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`"marked_requests":{"mark":"request","state":"attached","count":100,"p50":%d,"p99":%d,"dropped":2,"slo_p99":4000000,"attainment":0.95}`,
		p50, p99); !strings.Contains(string(j), want) {
		t.Errorf("JSON lacks %s:\n%s", want, j)
	}
	for _, tc := range []struct {
		ts   ctl.TideStatus
		want string
	}{
		{ctl.TideStatus{MarkState: ctl.MarkWaiting}, `; requests "request": none yet, no NVTX call seen`},
		{ctl.TideStatus{MarkState: ctl.MarkAttached}, `; requests "request": none yet`},
		{ctl.TideStatus{MarkState: ctl.MarkOther}, `; requests "request": none seen, NVTX_INJECTION64_PATH names another tool (a profiler)`},
	} {
		if got := TideText(ls("request", ctl.SLO{}, tc.ts)); !strings.HasSuffix(got, tc.want) {
			t.Errorf("state %d: %q, want it to end %q", tc.ts.MarkState, got, tc.want)
		}
	}
	if r := ls("", ctl.SLO{}, ctl.TideStatus{Marked: marked}); r.Marked != nil || strings.Contains(TideText(r), "requests \"") {
		t.Errorf("no mark: %+v, %q", r.Marked, TideText(r))
	}
}

// TestMarkedTop: carve top's column holds the marked requests that ended
// in its interval, "-" for a tenant without a mark.
func TestMarkedTop(t *testing.T) {
	before := periodsHist(map[time.Duration]uint64{1024 * time.Microsecond: 1000})
	after := periodsHist(map[time.Duration]uint64{1024 * time.Microsecond: 1000, 3072 * time.Microsecond: 10})
	mk := func(pid int, mark string, h ctl.Hist) Row {
		ts := ctl.TideStatus{State: ctl.TideIdle, Marked: h, MarkState: ctl.MarkAttached}
		return row(ctl.Entry{Snapshot: ctl.Snapshot{PID: pid, Tenant: pid, Class: ctl.ClassLS, Tide: ctl.Tide{Mark: mark}, TideStatus: ts}}, false)
	}
	prev, cur := []Row{mk(1, "request", before), mk(2, "", ctl.Hist{})}, []Row{mk(1, "request", after), mk(2, "", ctl.Hist{})}
	r := Between(prev, cur, time.Second)
	window := after.Sub(before)
	if m := r[1].Marked; m == nil || m.Count != 10 || m.P50 != window.Quantile(0.5) || m.P50 < 2560*time.Microsecond {
		t.Errorf("the interval's marked requests %+v, want the 10 of about 3ms", m)
	}
	if r[2].Marked != nil {
		t.Errorf("no mark, yet %+v", r[2].Marked)
	}
	var b strings.Builder
	WriteTop(&b, cur, r, time.Now(), time.Second)
	lines := strings.Split(b.String(), "\n")
	col := strings.Index(lines[2], "LS REQ P50/P99") // the columns are aligned
	if col < 0 {
		t.Fatalf("top has no LS REQ P50/P99 column:\n%s", b.String())
	}
	if !strings.HasPrefix(lines[3], "1 ") || !strings.HasPrefix(lines[4], "2 ") || strings.Fields(lines[4][col:])[0] != "-" {
		t.Fatalf("rows:\n%s", b.String())
	}
	if want := fmt.Sprintf("%v/%v", roundPeriod(window.Quantile(0.5)), roundPeriod(window.Quantile(0.99))); strings.Fields(lines[3][col:])[0] != want {
		t.Errorf("top's row of the tenant with a mark: its requests' column is not %q:\n%s", want, b.String())
	}
}
