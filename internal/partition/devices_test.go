// Tests of devices.go: --device values read into GPUs and their own
// partitions.

package partition

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseDevices(t *testing.T) {
	show := func(gpus []GPU) string {
		var parts []string
		for _, g := range gpus {
			s := fmt.Sprint(g.Ordinal)
			if g.Spec != nil {
				s += fmt.Sprintf(":%d/%v/%d", g.Spec.Kind, g.Spec.List, g.Spec.N)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "0"},
		{[]string{"1"}, "1"},
		{[]string{"0,1"}, "0 1"},
		{[]string{"1", "0"}, "1 0"},
		{[]string{"0:t=0-3", "1:8"}, "0:0/[0 1 2 3]/0 1:2/[]/8"},
		{[]string{"0:n=16", "1:g=2,3", "3"}, "0:2/[]/16 1:1/[2 3]/0 3"},
	} {
		got, all, err := ParseDevices(tc.in)
		if err != nil || all || show(got) != tc.want {
			t.Errorf("%q: %s %v %v, want %s", tc.in, show(got), all, err, tc.want)
		}
	}
	if _, all, err := ParseDevices([]string{"all"}); !all || err != nil {
		t.Errorf("all: %v %v", all, err)
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"0,0"}, "named twice"},
		{[]string{"0", "0:4"}, "named twice"},
		{[]string{"all", "1"}, "give it alone"},
		{[]string{"x"}, "ordinal"},
		{[]string{"-1"}, "ordinal"},
		{[]string{"0:0-15"}, "name TPCs as t=0-15"},
		{[]string{"0:q=3"}, "want n=COUNT"},
		{[]string{"0:t=5-3"}, "backwards"},
	} {
		if _, _, err := ParseDevices(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
}
