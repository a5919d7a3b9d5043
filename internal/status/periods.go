// An LS tenant's busy periods as carve ls, top and -o json show them: how
// many, their p50 and p99 (ctl.Hist's quantiles), all of them and those
// alone, and where it has an SLO the share within its target
// (slo.Attainment), over the tenant's life or over a window of top's.

package status

import (
	"fmt"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

// Periods are an LS tenant's busy periods (from its first launch after
// idle to its work drained; README.md says how they relate to requests):
// all of them, and those during which no BE tenant launched on the GPU
// (alone). The quantiles are to within a quarter octave.
type Periods struct {
	Count      uint64        `json:"count"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	AloneCount uint64        `json:"alone_count"`
	AloneP50   time.Duration `json:"alone_p50"`
	AloneP99   time.Duration `json:"alone_p99"`
	// the tenant's SLO (carve run --slo), zero for none; the target it
	// stands for (slo.Shown: a multiple's is the SLO controller's, 0
	// before it has calibrated); and the share of the periods within that
	// (attainment, slo.Attainment)
	SLO        ctl.SLO       `json:"slo,omitzero"`
	SLOP99     time.Duration `json:"slo_p99,omitempty"`
	Attainment *float64      `json:"attainment,omitempty"`
}

// PeriodsOf are what the histograms all and alone hold, and how far the
// periods keep the SLO s (zero: none), of which written is the target the
// SLO controller last wrote in the tenant's block (slo.Shown,
// slo.Attainment: as the controller's metric says it over its window).
func PeriodsOf(all, alone ctl.Hist, s ctl.SLO, written time.Duration) *Periods {
	p := &Periods{Count: all.Count(), P50: all.Quantile(0.5), P99: all.Quantile(0.99),
		AloneCount: alone.Count(), AloneP50: alone.Quantile(0.5), AloneP99: alone.Quantile(0.99)}
	if s != (ctl.SLO{}) {
		p.SLO = s
		p.SLOP99, p.Attainment = attained(all, s, written)
	}
	return p
}

// attained is the target of the SLO s (slo.Shown, of written: the target
// the SLO controller last wrote) and the share of h within it
// (slo.Attainment); 0 and nil where there is none yet.
func attained(h ctl.Hist, s ctl.SLO, written time.Duration) (time.Duration, *float64) {
	target := slo.Shown(s, written)
	a, ok := slo.Attainment(h, target)
	if !ok {
		return 0, nil
	}
	return target, &a
}

// periodsBetween are the periods an LS row's tenant saw since prev's.
func periodsBetween(prev, cur *ctl.TideStatus, s ctl.SLO) *Periods {
	return PeriodsOf(cur.Periods.Sub(prev.Periods), cur.Alone.Sub(prev.Alone), s, cur.SLOTarget)
}

// roundPeriod rounds d for people: 3 significant digits or so.
func roundPeriod(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond)
	default:
		return d.Round(10 * time.Nanosecond)
	}
}

// Text is p the way carve ls says it: "periods p50 1.2ms p99 3.4ms (alone
// p50 1ms p99 2ms)", "no periods" before the first.
func (p *Periods) Text() string {
	if p == nil || p.Count == 0 {
		return "no periods"
	}
	s := fmt.Sprintf("periods p50 %v p99 %v", roundPeriod(p.P50), roundPeriod(p.P99))
	if p.AloneCount > 0 {
		s += fmt.Sprintf(" (alone p50 %v p99 %v)", roundPeriod(p.AloneP50), roundPeriod(p.AloneP99))
	}
	return s + p.sloText()
}

// sloText is ", SLO 8ms: 99.2% within" where p has an SLO.
func (p *Periods) sloText() string {
	switch {
	case p.SLO == (ctl.SLO{}):
		return ""
	case p.Attainment == nil:
		return fmt.Sprintf(", SLO %s: no target yet (carve daemon calibrates it)", p.SLO)
	case p.SLO.Alone == 0:
		return fmt.Sprintf(", SLO %s: %.1f%% within", p.SLO, 100**p.Attainment)
	}
	return fmt.Sprintf(", SLO %s (%v): %.1f%% within", p.SLO, roundPeriod(p.SLOP99), 100**p.Attainment)
}

// SLOText is p's SLO and attainment the way carve top's column says it,
// "8ms/99.2%", "-" with no SLO, "2x/-" with no target yet or no
// period.
func (p *Periods) SLOText() string {
	switch {
	case p == nil || p.SLO == (ctl.SLO{}):
		return "-"
	case p.Attainment == nil || p.Count == 0:
		return p.SLO.String() + "/-"
	}
	return fmt.Sprintf("%s/%.1f%%", p.SLO, 100**p.Attainment)
}

// Quantiles is p's p50/p99 the way carve top's column says it, "-" with
// no period.
func (p *Periods) Quantiles() string {
	if p == nil {
		return "-"
	}
	return quantiles(p.Count, p.P50, p.P99)
}

// quantiles is a p50 and p99 of n the way carve top's columns say them,
// "1.2ms/3.4ms", "-" for none.
func quantiles(n uint64, p50, p99 time.Duration) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%v/%v", roundPeriod(p50), roundPeriod(p99))
}
