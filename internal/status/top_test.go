// Tests of top.go: rates and busy periods between two listings, and the
// frame printed.

package status

import (
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

func TestBetweenAndTop(t *testing.T) {
	prev := []Row{
		{PID: 1, Class: "ls", Launches: 100, Tide: &ctl.TideStatus{Busy: time.Second,
			Periods: periodsHist(map[time.Duration]uint64{1000 * time.Microsecond: 1000})}},
		{PID: 2, Class: "be", Launches: 1000, Tide: &ctl.TideStatus{Held: 2 * time.Second}},
		{PID: 4, BW: &BW{Share: 0.5, Strict: true, Busy: time.Second, Held: 100 * time.Millisecond},
			Kernels: &Kernels{KernelStatus: ctl.KernelStatus{Bytes: 1e9}}},
	}
	cur := []Row{
		{PID: 1, Class: "ls", TPCs: "0-15", NumTPCs: 16, State: "partitioned", Launches: 300, Tide: &ctl.TideStatus{Busy: 1500 * time.Millisecond,
			Periods: periodsHist(map[time.Duration]uint64{1000 * time.Microsecond: 1000, 2048 * time.Microsecond: 100})}},
		{PID: 2, Class: "be", TPCs: "0-65", NumTPCs: 66, State: "partitioned", Launches: 5000, Tide: &ctl.TideStatus{Held: 2250 * time.Millisecond, Inflight: 3}},
		{PID: 3, TPCs: "16-20", NumTPCs: 5, State: "partitioned"}, // new: no rates yet
		{PID: 4, TPCs: "21-30", NumTPCs: 10, State: "partitioned", BW: &BW{Share: 0.5, Strict: true, Busy: 1900 * time.Millisecond, Held: 500 * time.Millisecond},
			Kernels: &Kernels{KernelStatus: ctl.KernelStatus{Bytes: 6e9}}},
	}
	r := Between(prev, cur, 2*time.Second)
	if r[1].Launches != 100 || r[1].Busy != 0.25 || r[2].Launches != 2000 || r[2].Held != 0.125 {
		t.Errorf("rates %+v", r)
	}
	if r[4].BWBusy != 0.45 || r[4].BWHeld != 0.2 || r[4].DRAM != 2.5 {
		t.Errorf("a share's rates %+v, want its kernels 0.45 of the time, launches held 0.2 and 2.5 GB/s by its table", r[4])
	}
	if _, ok := r[3]; ok {
		t.Error("rates for a process seen once")
	}
	var b strings.Builder
	WriteTop(&b, cur, r, time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC), 2*time.Second)
	// the window holds the 100 periods of 1.792 to 2.048 ms alone, not the
	// 1000 shorter ones before it
	if p := r[1].Periods; p == nil || p.Count != 100 || p.P50 != 1920*time.Microsecond {
		t.Errorf("the LS tenant's periods over the interval: %+v, want 100 with p50 1.92ms", p)
	}
	for _, want := range []string{"25%", "12%", "2000", "0-65", "1.92ms/2.045ms", "0.5 strict/0.45/20%  2.5 "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("top lacks %q:\n%s", want, b.String())
		}
	}
}
