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
	if p := PeriodsOf(all, ctl.Hist{}, ctl.SLO{}, ctl.Hist{}, 0); p.SLO != (ctl.SLO{}) || p.Attainment != nil || p.SLOText() != "-" ||
		strings.Contains(p.Text(), "SLO") {
		t.Errorf("no SLO: %+v, %q", p, p.Text())
	}
	p := PeriodsOf(all, ctl.Hist{}, ctl.SLO{Max: 2 * time.Millisecond}, ctl.Hist{}, 0)
	if p.SLOP99 != 2*time.Millisecond || p.Attainment == nil || *p.Attainment != 0.9 ||
		!strings.HasSuffix(p.Text(), ", SLO 2ms: 90.0% within") || p.SLOText() != "2ms/90.0%" {
		t.Errorf("SLO 2ms: %+v, %q, %q", p, p.Text(), p.SLOText())
	}
	p = PeriodsOf(all, ctl.Hist{}, ctl.SLO{Alone: 2}, ctl.Hist{}, 0)
	if p.SLOP99 != 0 || p.Attainment != nil || !strings.HasSuffix(p.Text(), "SLO 2x: no alone periods yet") || p.SLOText() != "2x/-" {
		t.Errorf("SLO 2x without a reference: %+v, %q", p, p.Text())
	}
	alone := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: slo.AloneMin})
	p = PeriodsOf(all, alone, ctl.SLO{Alone: 2}, alone, 0)
	if p.SLOP99 < 4*time.Millisecond || p.SLOP99 > 4096*time.Microsecond || *p.Attainment < 0.9 ||
		!strings.Contains(p.Text(), ", SLO 2x (4.") {
		t.Errorf("SLO 2x of an alone p99 of about 2ms: %+v, %q", p, p.Text())
	}
}

// TestPeriodsAttainmentIsTheControllers: a multiple's target and the
// share within it are slo.Attainment's at the tenant's request rate, as
// carve_ls_slo_attainment says them; the SLO comes back from JSON, and
// top's interval reads it from a decoded row.
func TestPeriodsAttainmentIsTheControllers(t *testing.T) {
	all := periodsHist(map[time.Duration]uint64{1024 * time.Microsecond: 90, 8192 * time.Microsecond: 10})
	alone := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: slo.AloneMin})
	s := ctl.SLO{Alone: 2}
	idle := PeriodsOf(all, alone, s, alone, 0)
	p := PeriodsOf(all, alone, s, alone, 300)
	share, target, ok := slo.Attainment(all, s, alone, 300)
	if !ok || p.SLOP99 != target || p.Attainment == nil || *p.Attainment != share {
		t.Errorf("at 300/s: %+v, want slo.Attainment's target %v and share %g", p, target, share)
	}
	if p.SLOP99 <= idle.SLOP99 {
		t.Errorf("the target at 300/s, %v, is not above that at no rate, %v", p.SLOP99, idle.SLOP99)
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
	cur := &ctl.TideStatus{Periods: all, Alone: alone, Requests: 300}
	if q := periodsBetween(prev, cur, back.SLO, time.Second); q.SLOP99 != target || *q.Attainment != share {
		t.Errorf("top's second at 300/s from a decoded row: %+v, want %v, %g", q, target, share)
	}
	if b, _ := json.Marshal(PeriodsOf(all, alone, ctl.SLO{}, alone, 0)); strings.Contains(string(b), "slo") {
		t.Errorf("no SLO: %s", b)
	}
}
