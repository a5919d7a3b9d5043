// Fuzz targets for what users write as partitions (-g, -n, --device; -t's
// is FuzzParseTPCs, in partition_test.go): no input panics, and what
// parses is in range and reads back the same from its String.

package partition

import (
	"math"
	"slices"
	"strconv"
	"testing"
)

// checkList: l holds indexes within a GPU's mask and, as a Set, reads back
// from its String.
func checkList(t *testing.T, text string, l []int) {
	t.Helper()
	if len(l) == 0 {
		t.Fatalf("%q: parsed to an empty list", text)
	}
	for _, i := range l {
		if i < 0 || i > maxIndex {
			t.Fatalf("%q: index %d out of 0-%d", text, i, maxIndex)
		}
	}
	s := Of(l)
	back, err := ParseList(s.String())
	if err != nil || !slices.Equal(Of(back), s) {
		t.Fatalf("%q: %v reads back from %q as %v, %v", text, s, s.String(), back, err)
	}
}

func FuzzParseGPCs(f *testing.F) {
	for _, s := range []string{"2,3", "0-1", "all", "7", "0-127", "", "3-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseGPCs(text)
		if err != nil {
			return
		}
		if s.Kind != GPCs {
			t.Fatalf("%q: kind %d", text, s.Kind)
		}
		checkList(t, text, s.List)
	})
}

// checkCount: s is a positive count or a share in (0, 100], and its value
// written out parses to the same.
func checkCount(t *testing.T, text string, s Spec) {
	t.Helper()
	if s.Kind != Count {
		t.Fatalf("%q: kind %d", text, s.Kind)
	}
	var again string
	switch {
	case s.N > 0 && s.Percent == 0:
		again = strconv.Itoa(s.N)
	case s.N == 0 && s.Percent > 0 && s.Percent <= 100 && !math.IsNaN(s.Percent):
		again = strconv.FormatFloat(s.Percent, 'g', -1, 64) + "%"
	default:
		t.Fatalf("%q: count %d, share %g", text, s.N, s.Percent)
	}
	back, err := ParseCount(again)
	if err != nil || back.N != s.N || back.Percent != s.Percent {
		t.Fatalf("%q: %d TPCs, %g%% reads back from %q as %+v, %v", text, s.N, s.Percent, again, back, err)
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"20", "50%", " 50 % ", "100%", "100.0001%", "0", "0%", "-3", "NaN%", "1e2%", "1e-300%", "9223372036854775807", "+5", "5.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if s, err := ParseCount(text); err == nil {
			checkCount(t, text, s)
		}
	})
}

func FuzzParseDevices(f *testing.F) {
	for _, s := range [][2]string{{"0", ""}, {"0,1", "2"}, {"all", ""}, {"all", "1"}, {"0:t=0-15", "1:8"}, {"1:n=25%", "0:g=2,3"},
		{"0", "0"}, {"-1", ""}, {"0:", ""}, {"0:x=1", ""}, {"0:t=all", ""}, {" 3 ", "4:16"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, values := range [][]string{{a}, {a, b}} {
			gpus, all, err := ParseDevices(values)
			if err != nil {
				continue
			}
			if all {
				if len(gpus) != 0 || len(values) != 1 {
					t.Fatalf("%q: all with GPUs %v", values, gpus)
				}
				continue
			}
			if len(gpus) == 0 {
				t.Fatalf("%q: no GPU and not all", values)
			}
			seen := map[int]bool{}
			for _, g := range gpus {
				if g.Ordinal < 0 || seen[g.Ordinal] {
					t.Fatalf("%q: ordinal %d negative or named twice", values, g.Ordinal)
				}
				seen[g.Ordinal] = true
				if g.Spec == nil {
					continue
				}
				switch g.Spec.Kind {
				case Count:
					checkCount(t, g.Spec.Text, *g.Spec)
				case TPCs, GPCs:
					checkList(t, g.Spec.Text, g.Spec.List)
				case All:
				default:
					t.Fatalf("%q: kind %d", values, g.Spec.Kind)
				}
			}
		}
	})
}
