// Tests of partition.go (specs parsed and resolved, TPCs packed into the
// fewest GPCs, masks) and of counts.go's ParseCounts.

package partition

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

var h100 = topotest.H100

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "0", want: []int{0}},
		{in: "0-3", want: []int{0, 1, 2, 3}},
		{in: " 5 , 1-2 ", want: []int{5, 1, 2}},
		{in: "3-3", want: []int{3}},
		{in: "127", want: []int{127}},
		{in: "", err: "empty list"},
		{in: "1,,2", err: "empty item"},
		{in: "3-1", err: "backwards"},
		{in: "-1", err: "not a non-negative integer"},
		{in: "a", err: "not a non-negative integer"},
		{in: "1-", err: "not a non-negative integer"},
		{in: "0x3", err: "not a non-negative integer"},
		{in: "128", err: "past 127"},
		{in: "99999999999999999999", err: "past 127"},
		{in: "1-2-3", err: "not a non-negative integer"},
	} {
		got, err := ParseList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseList(%q) = %v, %v; want error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		percent float64
		bad     bool
	}{
		{in: "20", n: 20}, {in: "50%", percent: 50}, {in: "12.5%", percent: 12.5}, {in: "100%", percent: 100},
		{in: "0", bad: true}, {in: "-3", bad: true}, {in: "0%", bad: true}, {in: "101%", bad: true},
		{in: "NaN%", bad: true}, {in: "x", bad: true}, {in: "%", bad: true},
	} {
		s, err := ParseCount(tc.in)
		if tc.bad != (err != nil) || (err == nil && (s.N != tc.n || s.Percent != tc.percent)) {
			t.Errorf("ParseCount(%q) = %+v, %v", tc.in, s, err)
		}
	}
}

func TestResolve(t *testing.T) {
	top := h100(t)
	for _, tc := range []struct {
		name string
		spec func() (Spec, error)
		want string
		n    int
		err  string
	}{
		{name: "range", spec: func() (Spec, error) { return ParseTPCs("0-15,20") }, want: "0-15,20"},
		{name: "duplicates merge", spec: func() (Spec, error) { return ParseTPCs("3,1-3") }, want: "1-3"},
		{name: "all", spec: func() (Spec, error) { return ParseTPCs("all") }, want: "0-65"},
		{name: "last TPC", spec: func() (Spec, error) { return ParseTPCs("65") }, want: "65"},
		{name: "past last TPC", spec: func() (Spec, error) { return ParseTPCs("60-66") }, err: "TPC 66 does not exist"},
		{name: "gpcs", spec: func() (Spec, error) { return ParseGPCs("0,2") }, want: "0-3,12-19"},
		{name: "gpc past last", spec: func() (Spec, error) { return ParseGPCs("12") }, err: "GPC 12 does not exist"},
		{name: "count", spec: func() (Spec, error) { return ParseCount("20") }, n: 20},
		{name: "percent", spec: func() (Spec, error) { return ParseCount("50%") }, n: 33},
		{name: "tiny percent", spec: func() (Spec, error) { return ParseCount("0.1%") }, n: 1},
		{name: "too many", spec: func() (Spec, error) { return ParseCount("67") }, err: "67 TPCs asked for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.spec()
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Resolve(top, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if tc.n != 0 && len(got) != tc.n {
				t.Errorf("got %d TPCs (%s), want %d", len(got), got, tc.n)
			}
		})
	}
}

// gpcsOf counts the GPCs a set touches.
func gpcsOf(top *topo.Topology, s Set) int {
	g := map[int]bool{}
	for _, i := range s {
		g[top.TPCs[i].GPC] = true
	}
	return len(g)
}

func TestPackUsesFewestGPCs(t *testing.T) {
	top := h100(t)
	for n := 1; n <= len(top.TPCs); n++ {
		s := Pack(top, n, nil)
		if len(s) != n {
			t.Fatalf("Pack(%d) gave %d TPCs", n, len(s))
		}
		// fewest possible: the k largest GPCs must hold n
		sizes := []int{}
		for _, g := range top.GPCs {
			sizes = append(sizes, len(g.TPCs))
		}
		sortDesc(sizes)
		k, sum := 0, 0
		for sum < n {
			sum += sizes[k]
			k++
		}
		if got := gpcsOf(top, s); got != k {
			t.Errorf("Pack(%d) spans %d GPCs (%s), %d would do", n, got, s, k)
		}
	}
}

func sortDesc(xs []int) {
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] > xs[i] {
				xs[i], xs[j] = xs[j], xs[i]
			}
		}
	}
}

func TestPackAvoidsBusy(t *testing.T) {
	top := h100(t)
	busy := Pack(top, 20, nil)
	s := Pack(top, 20, busy)
	if common := s.Intersect(busy); len(common) > 0 {
		t.Errorf("second partition %s overlaps the first %s at %s", s, busy, common)
	}
	// when free TPCs run out, busy ones are shared rather than failing
	all := Pack(top, 60, nil)
	s = Pack(top, 20, all)
	if len(s) != 20 || len(s.Intersect(all)) != 14 {
		t.Errorf("with 6 free TPCs, Pack(20) = %s: want the 6 free and 14 shared", s)
	}
}

// TestPackEveryGPCTaken: when every GPC has been taken whole and TPCs are
// still wanted, the rest comes from busy ones (it once indexed past the
// GPCs instead).
func TestPackEveryGPCTaken(t *testing.T) {
	top := h100(t)
	busy := Set{8, 9, 10, 11}
	for n := 60; n <= 66; n++ {
		s := Pack(top, n, busy)
		if len(s) != n || len(s.Intersect(busy)) != max(0, n-62) {
			t.Errorf("Pack(%d) beside 4 busy = %d TPCs, %d of them busy", n, len(s), len(s.Intersect(busy)))
		}
	}
}

func TestParseCounts(t *testing.T) {
	if got, err := ParseCounts("all", 4); err != nil || !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("all: %v %v", got, err)
	}
	if got, err := ParseCounts("8, 2,8,4", 66); err != nil || !slices.Equal(got, []int{2, 4, 8}) {
		t.Errorf("list: %v %v", got, err)
	}
	for _, bad := range []string{"0", "67", "x", "", "2,,3"} {
		if _, err := ParseCounts(bad, 66); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestPackSixWays fills the GPU with six partitions of 11 TPCs, each packed
// beside the union of those before it: none may overlap.
func TestPackSixWays(t *testing.T) {
	top := h100(t)
	var used Set
	for i := range 6 {
		s := Pack(top, 11, used)
		if common := s.Intersect(used); len(s) != 11 || len(common) > 0 {
			t.Fatalf("partition %d: %s overlaps %s at %s", i, s, used, common)
		}
		used = used.Union(s)
	}
	if len(used) != 66 {
		t.Errorf("six partitions cover %d TPCs, want 66", len(used))
	}
	if u := (Set{1, 5}).Union(Set{0, 5, 9}); !slices.Equal(u, Set{0, 1, 5, 9}) {
		t.Errorf("union %v", u)
	}
}

func TestMaskRoundTrip(t *testing.T) {
	top := h100(t)
	for _, spec := range []string{"0", "0-65", "0-15,20", "62-65", "4-11,30"} {
		s, _ := ParseTPCs(spec)
		set, err := s.Resolve(top, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Mask(top, set)
		if err != nil {
			t.Fatal(err)
		}
		enabled := m.Enable().And(top.Live()).Count()
		if enabled != len(set) {
			t.Errorf("%s: mask enables %d live TPCs, want %d", spec, enabled, len(set))
		}
		if dead := m.Enable().Count() - enabled; dead != 0 {
			t.Errorf("%s: mask enables %d dead bits", spec, dead)
		}
		if back := FromMask(top, m); back.String() != set.String() {
			t.Errorf("%s: FromMask gives %s", spec, back)
		}
		e, err := Enable(top, set)
		if err != nil || e.Disable() != m || e.Count() != len(set) {
			t.Errorf("%s: enable set %v (%v), want the %d bits mask %v leaves on", spec, e, err, len(set), m)
		}
		if back := FromEnable(top, e); back.String() != set.String() {
			t.Errorf("%s: FromEnable gives %s", spec, back)
		}
	}
	if _, err := Mask(top, Set{}); err == nil {
		t.Error("empty set gave a mask")
	}
	if _, err := Mask(top, Set{66}); err == nil {
		t.Error("TPC 66 gave a mask")
	}
	if _, err := Enable(top, Set{}); err == nil {
		t.Error("empty set gave an enable set")
	}
}

// TestCountOf: a count given as a number is the spec its text parses to.
func TestCountOf(t *testing.T) {
	top := h100(t)
	for _, n := range []int{1, 20, 66} {
		want, _ := ParseCount(fmt.Sprint(n))
		got := CountOf(n)
		a, errA := got.Resolve(top, Set{0, 1, 2})
		b, errB := want.Resolve(top, Set{0, 1, 2})
		if !reflect.DeepEqual(got, want) || errA != nil || errB != nil || a.String() != b.String() {
			t.Errorf("CountOf(%d) = %+v on %s, want %+v on %s", n, got, a, want, b)
		}
	}
}

func TestMaskOfH100Bits(t *testing.T) {
	top := h100(t)
	m, err := Mask(top, Set{0, 62})
	if err != nil {
		t.Fatal(err)
	}
	// logical 0 is bit 0; logical 62 is the first TPC past the eight full GPCs
	want := topo.Enable{}.Set(0).Set(top.TPCs[62].Bit).Disable()
	if m != want {
		t.Errorf("mask %v, want %v", m, want)
	}
}

func FuzzParseTPCs(f *testing.F) {
	for _, s := range []string{"0-15,20", "all", "1,,2", "3-1", "127", " 4 ", "0-127"} {
		f.Add(s)
	}
	top := h100(f)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseTPCs(in)
		if err != nil {
			return
		}
		set, err := s.Resolve(top, nil)
		if err != nil {
			return
		}
		// a resolved set is sorted, distinct, in range, reparses to itself
		for i, x := range set {
			if x < 0 || x >= len(top.TPCs) || (i > 0 && set[i-1] >= x) {
				t.Fatalf("%q resolved to %v", in, set)
			}
		}
		s2, err := ParseTPCs(set.String())
		if err != nil {
			t.Fatalf("%q -> %s does not reparse: %v", in, set, err)
		}
		set2, _ := s2.Resolve(top, nil)
		if set2.String() != set.String() {
			t.Fatalf("%q: %s reparses as %s", in, set, set2)
		}
		if _, err := Mask(top, set); err != nil {
			t.Fatalf("%q: valid set %s has no mask: %v", in, set, err)
		}
	})
}
