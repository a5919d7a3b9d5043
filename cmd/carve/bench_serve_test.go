// Tests of carve bench serve's parsing of its --tide settings.

package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/ctl"
)

func TestParseTide(t *testing.T) {
	got, err := parseTide([]string{"8:300us:0.05", "4:0s:1:50:own", "8:300us:1:floor=8", "2:0s:0.5:20:floor=12", "8:300us:0:slice=200us", "8:300us:1:slo=8ms", "8:300us:1:16:slo=2x", "8:300us:1:slo=2x:kernels=/t/d.json", "8:300us:1:slo=2x:mark"})
	be := func(n int, q time.Duration, share float64, floor int) ctl.Policy {
		return ctl.Policy{Class: ctl.ClassBE, Inflight: n, Queue: q, Share: share, Floor: floor, Epoch: ctl.DefaultPolicy.Epoch}
	}
	ls := ctl.Policy{Class: ctl.ClassLS}
	own := ctl.Policy{Class: ctl.ClassLS, Own: true}
	want := []bench.TideSetting{{BE: be(8, 300*time.Microsecond, 0.05, 0), LS: ls},
		{BE: be(4, 0, 1, 0), LS: own, LSTPCs: 50},
		{BE: be(8, 300*time.Microsecond, 1, 8), LS: ls},
		{BE: be(2, 0, 0.5, 12), LS: ls, LSTPCs: 20},
		{BE: func() ctl.Policy { p := be(8, 300*time.Microsecond, 0, 0); p.Slice = 200 * time.Microsecond; return p }(), LS: ls},
		{BE: be(8, 300*time.Microsecond, 1, 0), LS: ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Max: 8 * time.Millisecond}}},
		{BE: be(8, 300*time.Microsecond, 1, 0), LS: ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 2}}, LSTPCs: 16},
		{BE: func() ctl.Policy { p := be(8, 300*time.Microsecond, 1, 0); p.Kernels = "/t/d.json"; return p }(), LS: ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 2}}},
		{BE: be(8, 300*time.Microsecond, 1, 0), LS: ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 2}, Mark: bench.ServeMark}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseTide: %+v, %v; want %+v", got, err, want)
	}
	// the rules of carve run's flags hold for them too
	for in, msg := range map[string]string{"8:300us:1:floor=4": "floor of 4 TPCs: want at least 8",
		"8:300us:2": "BE share 2: want a fraction", "-1:0s:1": "kernels in flight -1", "8:-1s:1": "queue -1s",
		"8:300us:0:slice=5us": "pieces of 5µs", "8:300us:1:slo=0x": "want", "8:300us:1:slo=1h": "want",
		"8:300us:1:kernels=": "want", "8:300us:1:mark:mark": "want", "8:300us:1:kernels=/" + strings.Repeat("k", 127): "a path of 128 bytes"} {
		if _, err := parseTide([]string{in}); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), in) {
			t.Errorf("parseTide(%s): %v, want an error naming it and saying %q", in, err, msg)
		}
	}
}
