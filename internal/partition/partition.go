// Package partition turns what users write ("0-15,20", GPCs "2,3", a count
// "20", a share "50%") into sets of logical TPCs and those into TPC enable
// sets and hardware TPC-disable masks.
package partition

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/carve-gpu/carve/internal/topo"
)

// Set is a sorted list of distinct logical TPC indexes.
type Set []int

// String writes s compactly: "0-15,20".
func (s Set) String() string {
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(s[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Contains reports whether i is in s.
func (s Set) Contains(i int) bool {
	k := sort.SearchInts(s, i)
	return k < len(s) && s[k] == i
}

// Intersect returns the TPCs in both sets.
func (s Set) Intersect(o Set) Set {
	var out Set
	for _, i := range s {
		if o.Contains(i) {
			out = append(out, i)
		}
	}
	return out
}

// Union returns the TPCs in either set (a Set is sorted: append would not
// keep it so).
func (s Set) Union(o Set) Set { return normalize(append(append([]int(nil), s...), o...)) }

// Of makes a Set of xs: sorted, duplicates dropped.
func Of(xs []int) Set { return normalize(append([]int(nil), xs...)) }

func normalize(xs []int) Set {
	sort.Ints(xs)
	out := Set{}
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Kind says how a spec names TPCs.
type Kind int

// Spec kinds.
const (
	TPCs  Kind = iota // logical TPC indexes and ranges
	GPCs              // whole GPCs by index
	Count             // n TPCs, or a percentage, placed GPC-packed
	All               // every TPC
)

// Spec is a parsed partition request; Resolve turns it into a Set.
type Spec struct {
	Kind    Kind
	List    []int   // TPCs or GPCs, as written (ranges expanded)
	N       int     // Count: number of TPCs (0 when Percent is set)
	Percent float64 // Count: share of all TPCs, in (0, 100]
	Text    string  // as the user wrote it
}

// maxIndex bounds indexes before any topology is known (the mask is 128 bits).
const maxIndex = topo.MaskBits - 1

// ParseList parses "0-15,20,30-31": comma-separated indexes and inclusive
// ranges. Whitespace around items is allowed; nothing else is.
func ParseList(text string) ([]int, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty list")
	}
	var out []int
	for _, item := range strings.Split(text, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%q: empty item between commas", text)
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parseIndex(lo, item)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseIndex(hi, item); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%q: range runs backwards", item)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

func parseIndex(s, item string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q: %q is not a non-negative integer", item, s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxIndex {
		return 0, fmt.Errorf("%q: index %s is past %d, the largest any GPU has", item, s, maxIndex)
	}
	return n, nil
}

// ParseTPCs parses a -t spec: "0-15,20" or "all".
func ParseTPCs(text string) (Spec, error) {
	if strings.TrimSpace(text) == "all" {
		return Spec{Kind: All, Text: text}, nil
	}
	l, err := ParseList(text)
	if err != nil {
		return Spec{}, fmt.Errorf("TPC list: %w", err)
	}
	return Spec{Kind: TPCs, List: l, Text: text}, nil
}

// ParseGPCs parses a -g spec: "2,3" or "0-1".
func ParseGPCs(text string) (Spec, error) {
	l, err := ParseList(text)
	if err != nil {
		return Spec{}, fmt.Errorf("GPC list: %w", err)
	}
	return Spec{Kind: GPCs, List: l, Text: text}, nil
}

// CountOf is the spec of n TPCs, placed as ParseCount's are.
func CountOf(n int) Spec { return Spec{Kind: Count, N: n, Text: strconv.Itoa(n)} }

// ParseCount parses a -n spec: "20" TPCs or "50%" of them.
func ParseCount(text string) (Spec, error) {
	s := strings.TrimSpace(text)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v > 100 {
			return Spec{}, fmt.Errorf("TPC share %q: want a percentage in (0, 100]", text)
		}
		return Spec{Kind: Count, Percent: v, Text: text}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return Spec{}, fmt.Errorf("TPC count %q: want a positive integer or a percentage like 50%%", text)
	}
	return Spec{Kind: Count, N: n, Text: text}, nil
}

// Resolve turns the spec into logical TPCs of t. busy holds TPCs already in
// other partitions: a Count spec avoids them where it can.
func (s Spec) Resolve(t *topo.Topology, busy Set) (Set, error) {
	n := len(t.TPCs)
	switch s.Kind {
	case All:
		out := make(Set, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	case TPCs:
		for _, i := range s.List {
			if i >= n {
				return nil, fmt.Errorf("TPC %d does not exist: this GPU has TPCs 0-%d", i, n-1)
			}
		}
		return normalize(append([]int(nil), s.List...)), nil
	case GPCs:
		var out []int
		for _, g := range s.List {
			if g >= len(t.GPCs) {
				return nil, fmt.Errorf("GPC %d does not exist: this GPU has GPCs 0-%d", g, len(t.GPCs)-1)
			}
			out = append(out, t.GPCs[g].TPCs...)
		}
		return normalize(out), nil
	case Count:
		want := s.N
		if s.Percent > 0 {
			want = max(1, int(math.Round(s.Percent*float64(n)/100)))
		}
		if want > n {
			return nil, fmt.Errorf("%d TPCs asked for, this GPU has %d", want, n)
		}
		return Pack(t, want, busy), nil
	}
	return nil, fmt.Errorf("unknown spec kind %d", s.Kind)
}

// Pack picks n TPCs spread over as few GPCs as it can, taking free TPCs
// (not in busy) before busy ones: whole GPCs with the most free TPCs first,
// then the remainder from the GPC whose free TPCs fit it most tightly, so
// that larger GPCs stay whole for others.
func Pack(t *topo.Topology, n int, busy Set) Set {
	type gpc struct{ free, taken []int }
	gs := make([]gpc, len(t.GPCs))
	for i, g := range t.GPCs {
		for _, tpc := range g.TPCs {
			if busy.Contains(tpc) {
				gs[i].taken = append(gs[i].taken, tpc)
			} else {
				gs[i].free = append(gs[i].free, tpc)
			}
		}
	}
	used := make([]bool, len(gs))
	var out []int
	for remaining := n; remaining > 0; {
		best := -1
		// the tightest GPC whose free TPCs hold all that remains
		for i, g := range gs {
			if !used[i] && len(g.free) >= remaining && (best < 0 || len(g.free) < len(gs[best].free)) {
				best = i
			}
		}
		if best >= 0 {
			out = append(out, gs[best].free[:remaining]...)
			break
		}
		// else the GPC with the most free TPCs, whole
		for i, g := range gs {
			if !used[i] && (best < 0 || len(g.free) > len(gs[best].free)) {
				best = i
			}
		}
		if best < 0 || len(gs[best].free) == 0 {
			break // no free TPC left anywhere: share busy ones below
		}
		used[best] = true
		out = append(out, gs[best].free...)
		remaining -= len(gs[best].free)
	}
	if len(out) < n { // fill up with busy TPCs, lowest index first
		have := normalize(append([]int(nil), out...))
		for i := 0; i < len(t.TPCs) && len(out) < n; i++ {
			if !have.Contains(i) {
				out = append(out, i)
			}
		}
	}
	return normalize(out)
}

// Enable is the set of s's TPC bits on t. It refuses sets that would
// enable no live TPC: a mask made of such a set hangs kernels.
func Enable(t *topo.Topology, s Set) (topo.Enable, error) {
	if len(s) == 0 {
		return topo.Enable{}, errors.New("empty partition: a kernel given no TPC would never run")
	}
	var enable topo.Enable
	for _, i := range s {
		if i < 0 || i >= len(t.TPCs) {
			return topo.Enable{}, fmt.Errorf("TPC %d does not exist: this GPU has TPCs 0-%d", i, len(t.TPCs)-1)
		}
		enable = enable.Set(t.TPCs[i].Bit)
	}
	if enable.And(t.Live()).Count() == 0 {
		return topo.Enable{}, errors.New("partition enables no live TPC")
	}
	return enable, nil
}

// Mask is the hardware TPC-disable mask that leaves exactly s enabled,
// refused as Enable refuses s.
func Mask(t *topo.Topology, s Set) (topo.Disable, error) {
	enable, err := Enable(t, s)
	if err != nil {
		return topo.Disable{}, err
	}
	return enable.Disable(), nil
}

// FromEnable is the set of logical TPCs whose bits enable has on.
func FromEnable(t *topo.Topology, enable topo.Enable) Set {
	out := Set{}
	for _, p := range t.TPCs {
		if enable.Has(p.Bit) {
			out = append(out, p.Index)
		}
	}
	return out
}

// FromMask is the set of logical TPCs a disable mask leaves enabled.
func FromMask(t *topo.Topology, disable topo.Disable) Set { return FromEnable(t, disable.Enable()) }
