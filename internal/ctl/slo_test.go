// Tests of slo.go and of the block's SLO fields: reading an SLO and back,
// its range, what a multiple stands for, the share of a histogram's
// periods within it, and a BE's dials steered and put back, by one
// caller or several at once.

package ctl_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ctl.SLO
		err  string
	}{
		{"8ms", ctl.SLO{Max: 8 * time.Millisecond}, ""},
		{" 500us ", ctl.SLO{Max: 500 * time.Microsecond}, ""},
		{"2x", ctl.SLO{Alone: 2}, ""},
		{"1.25x", ctl.SLO{Alone: 1.25}, ""},
		{"1.0004x", ctl.SLO{Alone: 1}, ""},
		{"8500ns", ctl.SLO{}, "8.5µs: want 10µs to 10s"},
		{"", ctl.SLO{}, ""},
		{"-1ms", ctl.SLO{}, "negative"},
		{"0x", ctl.SLO{}, "a multiple of nothing: want 1x"},
		{"0ms", ctl.SLO{}, ""}, // none, as a flag's zero
		{"1h", ctl.SLO{}, "1h0m0s: want 10µs to 10s"},
		{"1000x", ctl.SLO{}, "1000x: want 1x"},
		{"NaNx", ctl.SLO{}, "want 1x"},
		{"fast", ctl.SLO{}, `SLO "fast": want a time (8ms) or a multiple of the p99 alone (2x)`},
		{"8", ctl.SLO{}, "want a time"},
	} {
		got, err := ctl.ParseSLO(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
		case err == nil && got != (ctl.SLO{}):
			if again, err := ctl.ParseSLO(got.String()); err != nil || again != got {
				t.Errorf("%q: written %q, read back %+v, %v", tc.in, got, again, err)
			}
		}
	}
}

func TestSLOOf(t *testing.T) {
	for _, tc := range []struct {
		s     ctl.SLO
		alone time.Duration
		want  time.Duration
		ok    bool
	}{
		{ctl.SLO{Max: 8 * time.Millisecond}, 0, 8 * time.Millisecond, true},
		{ctl.SLO{Max: 8 * time.Millisecond}, time.Millisecond, 8 * time.Millisecond, true},
		{ctl.SLO{Alone: 2}, 3 * time.Millisecond, 6 * time.Millisecond, true},
		{ctl.SLO{Alone: 2}, 0, 0, false},
		{ctl.SLO{}, time.Millisecond, 0, false},
	} {
		if got, ok := tc.s.Of(tc.alone); got != tc.want || ok != tc.ok {
			t.Errorf("%v of %v: %v %v, want %v %v", tc.s, tc.alone, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHistWithin(t *testing.T) {
	var h ctl.Hist
	if got := h.Within(time.Millisecond); got != 1 {
		t.Errorf("empty: %g, want 1", got)
	}
	h.Counts[bucket(t, 1024*time.Microsecond)] = 90 // 896 to 1024 us
	h.Counts[bucket(t, 4096*time.Microsecond)] = 10 // 3584 to 4096 us
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{time.Microsecond, 0}, {960 * time.Microsecond, 0.45}, {1024 * time.Microsecond, 0.9}, {2 * time.Millisecond, 0.9},
		{3840 * time.Microsecond, 0.95}, {4096 * time.Microsecond, 1}, {time.Hour, 1},
	} {
		if got := h.Within(tc.d); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("within %v: %g, want %g", tc.d, got, tc.want)
		}
	}
}

// TestSteer: the SLO controller's dials change a BE's share and queue,
// keep what it asked (which its policy still says) and put it back.
func TestSteer(t *testing.T) {
	dir := t.TempDir()
	p := ctl.Policy{Class: ctl.ClassBE, Share: 0.05, Epoch: 10 * time.Millisecond, Inflight: 8, Queue: 300 * time.Microsecond}
	h := beBlock(t, dir, p)
	if err := h.Unsteer(); err != nil || h.Snapshot().Steered != nil || h.Snapshot().Tide.Share != 0.05 {
		t.Fatalf("unsteered before any steering: %+v, %v", h.Snapshot().Tide, err)
	}
	for _, share := range []float64{0.5, 0.25} {
		if err := h.Steer(share, 100*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		s := h.Snapshot()
		if s.Tide.Share != share || s.Tide.Queue != 100*time.Microsecond || s.Steered == nil ||
			*s.Steered != (ctl.Asked{Share: 0.05, Queue: 300 * time.Microsecond}) || s.Policy() != p {
			t.Errorf("steered to %g: tide %+v, asked %+v, policy %+v", share, s.Tide, s.Steered, s.Policy())
		}
	}
	if err := h.Unsteer(); err != nil {
		t.Fatal(err)
	}
	if s := h.Snapshot(); s.Steered != nil || s.Tide.Share != 0.05 || s.Tide.Queue != 300*time.Microsecond {
		t.Errorf("put back: tide %+v, steered %+v", s.Tide, s.Steered)
	}
}

// TestSteerAtOnce: of callers that steer a BE at once (two controllers on
// one directory), only the first keeps what it asked; none keeps a share
// another steered.
func TestSteerAtOnce(t *testing.T) {
	dir := t.TempDir()
	p := ctl.Policy{Class: ctl.ClassBE, Share: 0.05, Queue: 300 * time.Microsecond}
	h := beBlock(t, dir, p)
	const callers = 8
	var handles [callers]*ctl.Handle
	for i := range handles {
		var err error
		if handles[i], err = ctl.OpenPath(h.Path); err != nil {
			t.Fatal(err)
		}
		defer handles[i].Close()
	}
	for round := range 300 {
		var start, done sync.WaitGroup
		start.Add(1)
		for i, c := range handles {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				c.Steer(float64(i+1)/10, time.Duration(i+1)*time.Microsecond)
			}()
		}
		start.Done()
		done.Wait()
		if s := h.Snapshot(); s.Steered == nil || *s.Steered != (ctl.Asked{Share: 0.05, Queue: 300 * time.Microsecond}) {
			t.Fatalf("round %d: asked %+v, want what the BE asked", round, s.Steered)
		}
		if err := h.Unsteer(); err != nil {
			t.Fatal(err)
		}
	}
}

// beBlock is a BE tenant's block in dir under policy p, closed at the
// test's end.
func beBlock(t *testing.T, dir string, p ctl.Policy) *ctl.Handle {
	t.Helper()
	in := ctl.Init{PID: 4000, Parts: []ctl.Part{{Mask: [4]uint32{}, Live: [4]uint32{0xffff}}}}
	p.Apply(&in)
	h, err := ctl.Create(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
