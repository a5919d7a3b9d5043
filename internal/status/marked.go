// An LS tenant's requests as its program marks them with NVTX ranges
// (carve run --mark; shim/nvtx.c), as carve ls, top and -o json show
// them: how many, their p50 and p99, those the shim could not time, where
// it stands with NVTX, and where it has an SLO the share within its
// target, over the tenant's life or over a window of top's.

package status

import (
	"fmt"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Marked are the NVTX ranges named Mark that an LS tenant's program made,
// each timed from its push or start to its pop or end (the quantiles to
// within a quarter octave).
type Marked struct {
	Mark string `json:"mark"`
	// State: "waiting" (no NVTX call yet: a program that makes none, or
	// not yet), "attached", or "other tool" (NVTX_INJECTION64_PATH named
	// another tool, a profiler, whose ranges they are: none is seen)
	State   string        `json:"state"`
	Count   uint64        `json:"count"`
	P50     time.Duration `json:"p50"`
	P99     time.Duration `json:"p99"`
	Dropped uint64        `json:"dropped,omitempty"` // marked ranges the shim could not time
	// the target of its SLO (slo.Shown; 0 before the SLO controller has
	// calibrated a multiple's), and the share of the ranges within it
	SLOP99     time.Duration `json:"slo_p99,omitempty"`
	Attainment *float64      `json:"attainment,omitempty"`
}

// markStates are ctl's mark states as Marked.State says them.
var markStates = map[uint32]string{ctl.MarkOff: "waiting", ctl.MarkWaiting: "waiting", ctl.MarkAttached: "attached", ctl.MarkOther: "other tool"}

// MarkedOf are the ranges h holds of an LS tenant with the mark mark (nil
// where it has none) and the status ts, against its SLO s (zero: none; a
// multiple's target the one the SLO controller last wrote, ts.SLOTarget).
func MarkedOf(mark string, ts ctl.TideStatus, h ctl.Hist, s ctl.SLO) *Marked {
	if mark == "" {
		return nil
	}
	m := &Marked{Mark: mark, State: markStates[ts.MarkState], Count: h.Count(), P50: h.Quantile(0.5), P99: h.Quantile(0.99),
		Dropped: ts.MarkDropped}
	if s != (ctl.SLO{}) {
		m.SLOP99, m.Attainment = attained(h, s, ts.SLOTarget)
	}
	return m
}

// Text is m the way carve ls says it: `requests "request" p50 1.2ms p99
// 3.4ms of 1000, 99.2% within 8.4ms`, or why there are none.
func (m *Marked) Text() string {
	switch {
	case m == nil:
		return ""
	case m.State == "other tool":
		return fmt.Sprintf("requests %q: none seen, NVTX_INJECTION64_PATH names another tool (a profiler)", m.Mark)
	case m.Count == 0 && m.State == "waiting":
		return fmt.Sprintf("requests %q: none yet, no NVTX call seen", m.Mark)
	case m.Count == 0:
		return fmt.Sprintf("requests %q: none yet", m.Mark)
	}
	s := fmt.Sprintf("requests %q p50 %v p99 %v of %d", m.Mark, roundPeriod(m.P50), roundPeriod(m.P99), m.Count)
	if m.Attainment != nil {
		s += fmt.Sprintf(", %.1f%% within %v", 100**m.Attainment, roundPeriod(m.SLOP99))
	}
	if m.Dropped > 0 {
		s += fmt.Sprintf(", %d not timed (nested too deep or too many open)", m.Dropped)
	}
	return s
}

// Quantiles is m's p50/p99 the way carve top's column says it, "-" with
// no mark or no range.
func (m *Marked) Quantiles() string {
	if m == nil {
		return "-"
	}
	return quantiles(m.Count, m.P50, m.P99)
}
