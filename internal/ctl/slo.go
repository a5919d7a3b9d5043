// An LS tenant's SLO as people write it (SLO): the bound on the p99 of
// its requests' latency as the SLO controller estimates it from its busy
// periods and busy time, a time ("8ms") or a multiple of that estimate
// alone ("2x"); reading it, writing it back, its range, and the time it
// stands for against a reference.

package ctl

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SLO is what an LS tenant's requests' p99 must keep under (carve run
// --slo, a claim config's slo), as internal/slo estimates it (slo.Estimate:
// its busy periods' p99 plus the queue's wait at its utilization): a time,
// or a multiple of that estimate made of its busy periods during which no
// BE tenant ran (Snapshot.TideStatus.Alone) at the request rate of the
// moment. internal/slo holds the GPU's BE tenants back to keep it. The
// zero value is none.
type SLO struct {
	Max   time.Duration // a time, whole microseconds; 0 where Alone is given
	Alone float64       // a multiple of the alone p99, in thousandths; 0 where Max is given
}

// The range of an SLO: shorter than SLOMin is below what a launch costs,
// longer than SLOMax bounds nothing a request would notice; a multiple
// below 1 asks for less than the tenant takes alone.
const (
	SLOMin      = 10 * time.Microsecond
	SLOMax      = 10 * time.Second
	SLOAloneMax = 100
)

// ParseSLO reads a time ("8ms", "500us") or a multiple of the alone p99
// ("2x", "1.5x"); "" is none. Anything out of range is an error.
func ParseSLO(s string) (SLO, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return SLO{}, nil
	}
	var v SLO
	if x, ok := strings.CutSuffix(s, "x"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return SLO{}, fmt.Errorf("SLO %q: want a time (8ms) or a multiple of the p99 alone (2x)", s)
		}
		if f == 0 {
			return SLO{}, fmt.Errorf("SLO %q: a multiple of nothing: want 1x (as alone) to %dx, or leave it out for none", s, SLOAloneMax)
		}
		v.Alone = f
	} else {
		d, err := time.ParseDuration(s)
		if err != nil {
			return SLO{}, fmt.Errorf("SLO %q: want a time (8ms) or a multiple of the p99 alone (2x)", s)
		}
		v.Max = d
	}
	if err := v.check(); err != nil {
		return SLO{}, fmt.Errorf("SLO %q: %s", s, err)
	}
	return v.rounded(), nil
}

// check says why s is out of range; nil where it is in range or none.
func (s SLO) check() error {
	switch {
	case s.Max != 0 && s.Alone != 0:
		return fmt.Errorf("a time (%v) and a multiple (%gx) at once: want one", s.Max, s.Alone)
	case s.Max < 0 || s.Alone < 0:
		return fmt.Errorf("negative: want a time of %v to %v or a multiple of 1x to %dx", SLOMin, SLOMax, SLOAloneMax)
	case s.Max != 0 && (s.Max < SLOMin || s.Max > SLOMax):
		return fmt.Errorf("%v: want %v to %v", s.Max, SLOMin, SLOMax)
	case math.IsNaN(s.Alone) || s.Alone != 0 && (s.Alone < 1 || s.Alone > SLOAloneMax):
		return fmt.Errorf("%gx: want 1x (as alone) to %dx", s.Alone, SLOAloneMax)
	}
	return nil
}

// rounded is s as the block holds it: a time in whole microseconds, a
// multiple in thousandths.
func (s SLO) rounded() SLO {
	return SLO{Max: s.Max.Round(time.Microsecond), Alone: math.Round(s.Alone*1000) / 1000}
}

// String is s as ParseSLO reads it back; "" for none.
func (s SLO) String() string {
	switch {
	case s.Alone != 0:
		return strconv.FormatFloat(s.Alone, 'f', -1, 64) + "x"
	case s.Max != 0:
		return s.Max.String()
	}
	return ""
}

// Set reads a flag's value (pflag.Value).
func (s *SLO) Set(text string) error {
	v, err := ParseSLO(text)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Type names a flag's value (pflag.Value).
func (s *SLO) Type() string { return "slo" }

// MarshalText writes s as String does (carve ls -o json: "8ms", "2x").
func (s SLO) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads s as ParseSLO does.
func (s *SLO) UnmarshalText(b []byte) error { return s.Set(string(b)) }

// Of is the p99 s stands for, given the p99 of the tenant's alone
// periods (0: none yet): a multiple needs one; ok is false without it,
// and for no SLO.
func (s SLO) Of(aloneP99 time.Duration) (max time.Duration, ok bool) {
	switch {
	case s.Max > 0:
		return s.Max, true
	case s.Alone > 0 && aloneP99 > 0:
		return time.Duration(float64(aloneP99) * s.Alone), true
	}
	return 0, false
}
