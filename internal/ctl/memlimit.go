// A tenant's memory limit as people write it (MemLimit): reading it from
// a size or a share of the GPU's memory, writing it back, and resolving it
// against a GPU's memory in bytes; FormatBytes writes sizes for people.

package ctl

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MemLimit is a tenant's limit on GPU memory as people write it (carve run
// --mem, a claim config's memory): bytes, or a share of the GPU's memory,
// which placement resolves against the GPU's total. The zero value is no
// limit.
type MemLimit struct {
	Bytes   uint64  // 0 where Percent is given
	Percent float64 // of the GPU's memory, above 0 and at most 100
}

// memUnits are the units a size may have (in upper case): powers of 1024
// however they are spelled, as MPS (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) and
// nvidia-smi count.
var memUnits = map[string]uint{"": 0, "B": 0}

func init() {
	for i, u := range []string{"K", "M", "G", "T"} {
		for _, spelled := range []string{u, u + "B", u + "I", u + "IB"} {
			memUnits[spelled] = 10 * uint(i+1)
		}
	}
}

var sizeSyntax = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)

// ParseMemLimit reads a size ("512M", "12G", "12GiB", "1.5T", bytes) or a
// share of the GPU's memory ("60%"). A limit of zero, a negative or
// malformed one, or a share over 100% is an error.
func ParseMemLimit(s string) (MemLimit, error) {
	s = strings.TrimSpace(s)
	want := "want a size (512M, 12G, 12GiB, 1.5T, bytes) or a share of the GPU's memory (60%)"
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		switch {
		case err != nil || !sizeSyntax.MatchString(strings.TrimSpace(pct)):
			return MemLimit{}, fmt.Errorf("memory limit %q: %s", s, want)
		case p <= 0:
			return MemLimit{}, fmt.Errorf("memory limit %q: a limit of nothing; leave it out for none", s)
		case p > 100:
			return MemLimit{}, fmt.Errorf("memory limit %q: a share of the GPU's memory is at most 100%%", s)
		}
		return MemLimit{Percent: p}, nil
	}
	m := sizeSyntax.FindStringSubmatch(s)
	if m == nil {
		if strings.HasPrefix(s, "-") {
			return MemLimit{}, fmt.Errorf("memory limit %q: a negative size", s)
		}
		return MemLimit{}, fmt.Errorf("memory limit %q: %s", s, want)
	}
	shift, ok := memUnits[strings.ToUpper(m[2])]
	if !ok {
		return MemLimit{}, fmt.Errorf("memory limit %q: unknown unit %q: %s", s, m[2], want)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return MemLimit{}, fmt.Errorf("memory limit %q: %s", s, want)
	}
	bytes := n * float64(uint64(1)<<shift)
	switch {
	case shift == 0 && strings.Contains(m[1], "."):
		return MemLimit{}, fmt.Errorf("memory limit %q: a number of bytes is whole", s)
	case bytes >= math.MaxUint64/2:
		return MemLimit{}, fmt.Errorf("memory limit %q: too large", s)
	case uint64(bytes) == 0:
		return MemLimit{}, fmt.Errorf("memory limit %q: a limit of nothing; leave it out for none", s)
	}
	return MemLimit{Bytes: uint64(bytes)}, nil
}

// String is the limit as ParseMemLimit reads it back: a share, or the
// size in the largest unit that holds it whole; "" for none.
func (m MemLimit) String() string {
	switch {
	case m.Percent > 0:
		return strconv.FormatFloat(m.Percent, 'f', -1, 64) + "%"
	case m.Bytes == 0:
		return ""
	}
	for _, u := range []struct {
		name  string
		shift uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if m.Bytes%(1<<u.shift) == 0 {
			return strconv.FormatUint(m.Bytes>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatUint(m.Bytes, 10)
}

// Set reads a flag's value (pflag.Value).
func (m *MemLimit) Set(s string) error {
	v, err := ParseMemLimit(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Type names a flag's value (pflag.Value).
func (m *MemLimit) Type() string { return "size" }

// ErrMemUnknown is Resolve's error for a share of a GPU whose memory is
// not known.
var ErrMemUnknown = errors.New("the GPU's memory is not known (a topology cached by an older carve: run 'carve topo' once)")

// Resolve is the limit in bytes on a GPU of total bytes (0: none): a share
// is rounded down to whole MiB. A limit over the GPU's memory is an error.
func (m MemLimit) Resolve(total uint64) (uint64, error) {
	b := m.Bytes
	if m.Percent > 0 {
		if total == 0 {
			return 0, ErrMemUnknown
		}
		b = uint64(float64(total)*m.Percent/100) &^ (1<<20 - 1)
		if b == 0 {
			return 0, fmt.Errorf("memory limit %s: less than 1 MiB of the GPU's %s", m, FormatBytes(total))
		}
	}
	if total > 0 && b > total {
		return 0, fmt.Errorf("memory limit %s: more than the GPU's %s", m, FormatBytes(total))
	}
	return b, nil
}

// FormatBytes is a size for people, in powers of 1024 with one decimal
// where it needs one: "512M", "11.3G", "0".
func FormatBytes(b uint64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if b >= 1<<u.shift {
			v := float64(b) / float64(uint64(1)<<u.shift)
			return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + u.name
		}
	}
	return strconv.FormatUint(b, 10)
}
