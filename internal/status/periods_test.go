// Tests of periods.go's SLO: the p99 it stands for, the share of periods
// within it, and how carve ls and top say it.

package status

import (
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

func TestPeriodsSLO(t *testing.T) {
	all := periodsHist(map[time.Duration]uint64{1024 * time.Microsecond: 90, 4096 * time.Microsecond: 10})
	if p := PeriodsOf(all, ctl.Hist{}, ctl.SLO{}, ctl.Hist{}); p.SLO != "" || p.Attainment != nil || p.SLOText() != "-" ||
		strings.Contains(p.Text(), "SLO") {
		t.Errorf("no SLO: %+v, %q", p, p.Text())
	}
	p := PeriodsOf(all, ctl.Hist{}, ctl.SLO{Max: 2 * time.Millisecond}, ctl.Hist{})
	if p.SLOP99 != 2*time.Millisecond || p.Attainment == nil || *p.Attainment != 0.9 ||
		!strings.HasSuffix(p.Text(), ", SLO 2ms: 90.0% within") || p.SLOText() != "2ms/90.0%" {
		t.Errorf("SLO 2ms: %+v, %q, %q", p, p.Text(), p.SLOText())
	}
	p = PeriodsOf(all, ctl.Hist{}, ctl.SLO{Alone: 2}, ctl.Hist{})
	if p.SLOP99 != 0 || p.Attainment != nil || !strings.HasSuffix(p.Text(), "SLO 2x: no alone periods yet") || p.SLOText() != "2x/-" {
		t.Errorf("SLO 2x without a reference: %+v, %q", p, p.Text())
	}
	alone := periodsHist(map[time.Duration]uint64{2048 * time.Microsecond: slo.AloneMin})
	p = PeriodsOf(all, alone, ctl.SLO{Alone: 2}, alone)
	if p.SLOP99 < 4*time.Millisecond || p.SLOP99 > 4096*time.Microsecond || *p.Attainment < 0.9 ||
		!strings.Contains(p.Text(), ", SLO 2x (4.") {
		t.Errorf("SLO 2x of an alone p99 of about 2ms: %+v, %q", p, p.Text())
	}
}
