// Tests of periods.go's SLO: the p99 it stands for, the share of periods
// within it (the controller's, slo.Attainment, at the tenant's rate), how
// carve ls and top say it, and a row read back from JSON.

package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

func TestPeriodsSLO(t *testing.T) {
	all := periodsHist(map[time.Duration]uint64{1024 * time.Microsecond: 90, 4096 * time.Microsecond: 10})
	if p := PeriodsOf(all, ctl.Hist{}, ctl.SLO{}, 3*time.Millisecond); p.SLO != (ctl.SLO{}) || p.Attainment != nil || p.SLOText() != "-" ||
		strings.Contains(p.Text(), "SLO") {
		t.Errorf("no SLO: %+v, %q", p, p.Text())
	}
	p := PeriodsOf(all, ctl.Hist{}, ctl.SLO{Max: 2 * time.Millisecond}, 0)
	if p.SLOP99 != 2*time.Millisecond || p.Attainment == nil || *p.Attainment != 0.9 ||
		!strings.HasSuffix(p.Text(), ", SLO 2ms: 90.0% within") || p.SLOText() != "2ms/90.0%" {
		t.Errorf("SLO 2ms: %+v, %q, %q", p, p.Text(), p.SLOText())
	}
	alone := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: slo.AloneMin})
	p = PeriodsOf(all, alone, ctl.SLO{Alone: 2}, 0)
	if p.SLOP99 != 0 || p.Attainment != nil || !strings.HasSuffix(p.Text(), "SLO 2x: no target yet (carve daemon calibrates it)") ||
		p.SLOText() != "2x/-" {
		t.Errorf("SLO 2x with alone periods but no target from the controller: %+v, %q", p, p.Text())
	}
	p = PeriodsOf(all, alone, ctl.SLO{Alone: 2}, 3500*time.Microsecond)
	if p.SLOP99 != 3500*time.Microsecond || *p.Attainment != 0.9 || !strings.Contains(p.Text(), ", SLO 2x (3.5ms): 90.0% within") {
		t.Errorf("SLO 2x, the controller's target 3.5ms: %+v, %q", p, p.Text())
	}
}

// TestPeriodsAttainmentIsTheControllers: a multiple's target is the one
// the SLO controller wrote in the block (not one of the block's alone
// periods), and the share within it slo.Attainment's, as
// carve_ls_slo_attainment says it; the SLO comes back from JSON, and
// top's interval reads it from a decoded row.
func TestPeriodsAttainmentIsTheControllers(t *testing.T) {
	all := periodsHist(map[time.Duration]uint64{1024 * time.Microsecond: 90, 8192 * time.Microsecond: 10})
	alone := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: slo.AloneMin})
	s := ctl.SLO{Alone: 2}
	const written = 10 * time.Millisecond
	p := PeriodsOf(all, alone, s, written)
	share, ok := slo.Attainment(all, written)
	if !ok || p.SLOP99 != written || p.Attainment == nil || *p.Attainment != share || share != 1 {
		t.Errorf("%+v, want the controller's target %v and slo.Attainment's share %g", p, written, share)
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"slo":"2x"`) {
		t.Fatalf("JSON %s, %v", b, err)
	}
	var back Periods
	if err := json.Unmarshal(b, &back); err != nil || back.SLO != s {
		t.Errorf("read back: %+v, %v; want SLO %v", back, err, s)
	}
	prev := &ctl.TideStatus{Periods: ctl.Hist{}, Alone: alone}
	cur := &ctl.TideStatus{Periods: all, Alone: alone, Requests: 300, SLOTarget: written}
	if q := periodsBetween(prev, cur, back.SLO); q.SLOP99 != written || *q.Attainment != share {
		t.Errorf("top's second from a decoded row: %+v, want %v, %g", q, written, share)
	}
	if b, _ := json.Marshal(PeriodsOf(all, alone, ctl.SLO{}, written)); strings.Contains(string(b), "slo") {
		t.Errorf("no SLO: %s", b)
	}
}
