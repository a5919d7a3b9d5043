// Tests of policy.go: each rule refuses what it should, an LS tenant's
// defaults, the policy in a block and back, carve run's flags for it, and
// every field of each class's policy through a block.

package ctl_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/topo"
)

// TestPolicyNormalize: each rule refuses what it should, naming the field
// as each surface spells it, and defaults are filled in or cleared.
func TestPolicyNormalize(t *testing.T) {
	be := func(edit func(*ctl.Policy)) ctl.Policy {
		p := ctl.DefaultPolicy
		p.Class = ctl.ClassBE
		edit(&p)
		return p
	}
	ls := func(edit func(*ctl.Policy)) ctl.Policy {
		p := ctl.DefaultPolicy // as carve run's flags and a claim's config start
		p.Class = ctl.ClassLS
		edit(&p)
		return p
	}
	for _, tc := range []struct {
		p                  ctl.Policy
		field, flag, claim string // what the error says with each spelling; "": none
	}{
		{be(func(p *ctl.Policy) {}), "", "", ""},
		{be(func(p *ctl.Policy) { p.Share = 2 }), "share: BE share 2: want a fraction from 0 to 1", "--be-share: BE share 2", "beShare: BE share 2"},
		{be(func(p *ctl.Policy) { p.Share = -0.1 }), "share: BE share -0.1", "--be-share:", "beShare:"},
		{be(func(p *ctl.Policy) { p.Epoch = 10 * time.Microsecond }), "epoch: epoch 10µs: want 1ms to an hour", "--epoch: epoch 10µs", "epoch: epoch 10µs"},
		{be(func(p *ctl.Policy) { p.Epoch = 2 * time.Hour }), "epoch: epoch 2h0m0s", "--epoch:", "epoch:"},
		{be(func(p *ctl.Policy) { p.Inflight = -1 }), "inflight: kernels in flight -1: want 0 (no bound) to 1048576", "--inflight:", "inflight:"},
		{be(func(p *ctl.Policy) { p.Queue = -time.Second }), "queue: queue -1s: want 0 (no bound) to an hour", "--queue:", "queue:"},
		{be(func(p *ctl.Policy) { p.Floor = -1 }), "floor: floor -1 TPCs: want 0 (none) to the GPU's TPCs", "--be-floor: floor -1 TPCs", "beFloor: floor -1"},
		{be(func(p *ctl.Policy) { p.Floor = 129 }), "floor: floor 129 TPCs", "--be-floor:", "beFloor:"},
		{be(func(p *ctl.Policy) { p.Floor = 7 }), "floor: a BE floor of 7 TPCs: want at least 8", "--be-floor: a BE floor of 7", "beFloor: a BE floor of 7"},
		{be(func(p *ctl.Policy) { p.Floor = 8 }), "", "", ""},
		{be(func(p *ctl.Policy) { p.Slice = 200 * time.Microsecond }), "", "", ""},
		{be(func(p *ctl.Policy) { p.Slice = 5 * time.Microsecond }), "slice: pieces of 5µs: want 0 (never cut) or 20µs to 1s", "--slice: pieces of 5µs", "slice: pieces of 5µs"},
		{be(func(p *ctl.Policy) { p.Slice = 2 * time.Second }), "slice: pieces of 2s", "--slice:", "slice:"},
		{ls(func(p *ctl.Policy) { p.Slice = time.Millisecond }), "slice is for BE tenants", "--slice is for BE", "slice is for BE"},
		{be(func(p *ctl.Policy) { p.Own = true }), "own is for LS tenants", "--own is for LS tenants", "own is for LS tenants"},
		{ls(func(p *ctl.Policy) { p.Own = true }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.Floor = 8 }), "floor is for BE tenants", "--be-floor is for BE tenants", "beFloor is for BE tenants"},
		{ls(func(p *ctl.Policy) { p.Inflight = 3 }), "inflight is for BE tenants", "--inflight is for BE", "inflight is for BE"},
		{ls(func(p *ctl.Policy) { p.Share = 0.5 }), "share is for BE tenants", "--be-share is for BE", "beShare is for BE"},
		{ls(func(p *ctl.Policy) { p.Epoch = time.Second }), "epoch is for BE tenants", "--epoch is for BE", "epoch is for BE"},
		{ls(func(p *ctl.Policy) { p.Queue = time.Second }), "queue is for BE tenants", "--queue is for BE", "queue is for BE"},
		{ctl.Policy{Own: true}, "own is for LS tenants", "--own is for LS", "own is for LS"},
		{ctl.Policy{BW: 0.5}, "", "", ""},
		{ctl.Policy{BW: 1, BWStrict: true}, "", "", ""},
		{be(func(p *ctl.Policy) { p.BW, p.BWStrict = 0.25, true }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.BW = 0.5 }), "", "", ""},
		{ctl.Policy{BW: 1.5}, "bw: bandwidth share 1.5: want a fraction above 0 and at most 1", "--bw: bandwidth share 1.5", "bandwidth: bandwidth share 1.5"},
		{ctl.Policy{BW: -0.5}, "bw: bandwidth share -0.5", "--bw:", "bandwidth:"},
		{ctl.Policy{BW: 0.001}, "bw: bandwidth share 0.001: a slot of 2µs of each 2ms; want at least 20µs", "--bw: bandwidth share 0.001", "bandwidth:"},
		{ctl.Policy{BWStrict: true}, "bwstrict: a strict bandwidth share needs a share", "--bw-strict: a strict", "bandwidthStrict: a strict"},
		{ls(func(p *ctl.Policy) { p.Mem = ctl.MemLimit{Bytes: 12 << 30} }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.SLO = ctl.SLO{Max: 8 * time.Millisecond} }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.SLO = ctl.SLO{Alone: 2} }), "", "", ""},
		{be(func(p *ctl.Policy) { p.SLO = ctl.SLO{Max: 8 * time.Millisecond} }), "slo is for LS tenants", "--slo is for LS tenants", "slo is for LS tenants"},
		{ls(func(p *ctl.Policy) { p.SLO = ctl.SLO{Max: -time.Millisecond} }), "slo: negative", "--slo: negative", "slo: negative"},
		{ls(func(p *ctl.Policy) { p.SLO = ctl.SLO{Max: time.Minute} }), "slo: 1m0s: want 10µs to 10s", "--slo: 1m0s", "slo: 1m0s"},
		{ls(func(p *ctl.Policy) { p.SLO = ctl.SLO{Alone: 0.5} }), "slo: 0.5x: want 1x (as alone) to 100x", "--slo: 0.5x", "slo: 0.5x"},
		{ls(func(p *ctl.Policy) { p.SLO = ctl.SLO{Max: time.Millisecond, Alone: 2} }), "slo: a time (1ms) and a multiple (2x) at once", "--slo: a time", "slo: a time"},
		{ls(func(p *ctl.Policy) { p.Mark = "request" }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.Mark = "req*" }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.Mark = strings.Repeat("r", 63) }), "", "", ""},
		{ls(func(p *ctl.Policy) { p.Mark = strings.Repeat("r", 64) }), "mark: NVTX range \"" + strings.Repeat("r", 64) + "\": 64 bytes, want at most 63", "--mark: NVTX range", "mark: NVTX range"},
		{ls(func(p *ctl.Policy) { p.Mark = "re*q" }), "mark: NVTX range \"re*q\": a '*' only at its end", "--mark: NVTX", "mark: NVTX"},
		{ls(func(p *ctl.Policy) { p.Mark = "réq" }), "mark: NVTX range \"réq\": want printable ASCII", "--mark: NVTX", "mark: NVTX"},
		{ls(func(p *ctl.Policy) { p.Mark = "a\x00b" }), "mark: NVTX range \"a\\x00b\": want printable ASCII", "--mark: NVTX", "mark: NVTX"},
		{be(func(p *ctl.Policy) { p.Mark = "request" }), "mark is for LS tenants", "--mark is for LS tenants", "mark is for LS tenants"},
		{be(func(p *ctl.Policy) { p.Mem = ctl.MemLimit{Percent: 60} }), "", "", ""},
		{ctl.Policy{Mem: ctl.MemLimit{Percent: 120}}, "mem: memory limit of 0 bytes and 120%", "--mem: memory limit", "memory: memory limit"},
		{ctl.Policy{Mem: ctl.MemLimit{Bytes: 1, Percent: 10}}, "mem: memory limit of 1 bytes and 10%", "--mem:", "memory:"},
		{ctl.Policy{Class: 7}, "class 7: want", "class 7: want", "class 7: want"},
	} {
		for _, sp := range []struct {
			spelled ctl.Spelling
			want    string
		}{{ctl.FieldNames, tc.field}, {ctl.FlagNames, tc.flag}, {ctl.ConfigNames, tc.claim}} {
			p := tc.p
			err := p.Normalize(sp.spelled)
			switch {
			case sp.want == "" && err != nil:
				t.Errorf("%+v (%q): %v", tc.p, sp.spelled, err)
			case sp.want != "" && (err == nil || !strings.HasPrefix(err.Error(), sp.want)):
				t.Errorf("%+v (%q): %v, want an error beginning %q", tc.p, sp.spelled, err, sp.want)
			}
		}
	}
}

// TestPolicyDefaults: an LS tenant's policy loses the BE defaults it
// started from, a BE's zero epoch becomes the default one, and Normalize
// changes nothing more of a normalized policy.
func TestPolicyDefaults(t *testing.T) {
	p := ctl.DefaultPolicy
	p.Class, p.Own = ctl.ClassLS, true
	if err := p.Normalize(ctl.FieldNames); err != nil || p != (ctl.Policy{Class: ctl.ClassLS, Own: true}) {
		t.Errorf("LS policy %+v, %v; want only its class and own", p, err)
	}
	none := ctl.DefaultPolicy
	if err := none.Normalize(ctl.FieldNames); err != nil || none != (ctl.Policy{}) {
		t.Errorf("a policy of no class %+v, %v; want the zero policy", none, err)
	}
	be := ctl.Policy{Class: ctl.ClassBE, Share: 1}
	if err := be.Normalize(ctl.FieldNames); err != nil || be.Epoch != ctl.DefaultPolicy.Epoch || be.Share != 1 || be.Inflight != 0 {
		t.Errorf("BE policy %+v, %v; want the default epoch, share 1 and no bound", be, err)
	}
	again := be
	if err := again.Normalize(ctl.FieldNames); err != nil || again != be {
		t.Errorf("normalized twice: %+v, %v; want %+v", again, err, be)
	}
}

// TestPolicyInBlock: a policy applied to a new block is the policy the
// block gives back, its floor counted from the TPCs placement chose; an
// LS tenant's own is the block's flag, beside the flags it had.
func TestPolicyInBlock(t *testing.T) {
	dir := t.TempDir()
	floor := topo.Enable{}.Set(3).Set(4).Set(5).Set(6).Set(9).Set(10).Set(11).Set(12)
	for i, p := range []ctl.Policy{
		{Class: ctl.ClassBE, Share: 0.25, Epoch: 7 * time.Millisecond, Inflight: 3, Queue: 250 * time.Microsecond, Floor: 8},
		{Class: ctl.ClassLS, Own: true, Mem: ctl.MemLimit{Bytes: 12 << 30}},
		{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 2.5}},
		{},
	} {
		in := ctl.Init{PID: 1000 + i, Flags: ctl.FlagMPS, Parts: []ctl.Part{{Mask: floor.Disable(), Live: floor, Node: "node-x"}}}
		if p.Floor > 0 {
			in.Parts[0].Floor = floor
		}
		p.Apply(&in)
		h, err := ctl.Create(dir, in)
		if err != nil {
			t.Fatal(err)
		}
		s := h.Snapshot()
		h.Close()
		if got := s.Policy(); got != p {
			t.Errorf("block of %+v gives back %+v", p, got)
		}
		if s.Flags&ctl.FlagMPS == 0 || s.Tide.Node != "node-x" || s.Class != p.Class {
			t.Errorf("block of %+v: flags %#x, node %q, class %d", p, s.Flags, s.Tide.Node, s.Class)
		}
	}
}

// TestRunArgs: the flags of carve run that give a tenant its policy.
func TestRunArgs(t *testing.T) {
	be := ctl.Policy{Class: ctl.ClassBE, Share: 0.05, Epoch: 10 * time.Millisecond, Inflight: 8, Queue: 0, Floor: 16}
	ls := ctl.Policy{Class: ctl.ClassLS, Own: true}
	for _, tc := range []struct {
		p    ctl.Policy
		want []string
	}{
		{be, []string{"--be", "--be-share=0.05", "--epoch=10ms", "--inflight=8", "--queue=0s", "--be-floor=16", "--slice=0s"}},
		{ctl.Policy{Class: ctl.ClassBE, Epoch: 10 * time.Millisecond, Slice: 200 * time.Microsecond},
			[]string{"--be", "--be-share=0", "--epoch=10ms", "--inflight=0", "--queue=0s", "--be-floor=0", "--slice=200µs"}},
		{ls, []string{"--ls", "--own"}},
		{ctl.Policy{Class: ctl.ClassLS}, []string{"--ls"}},
		{ctl.Policy{Class: ctl.ClassLS, Mem: ctl.MemLimit{Bytes: 3 << 29}}, []string{"--ls", "--mem=1536M"}},
		{ctl.Policy{Mem: ctl.MemLimit{Percent: 60}}, []string{"--mem=60%"}},
		{ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Max: 8 * time.Millisecond}}, []string{"--ls", "--slo=8ms"}},
		{ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 1.5}}, []string{"--ls", "--slo=1.5x"}},
		{ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 2}, Mark: "req*"}, []string{"--ls", "--slo=2x", "--mark=req*"}},
		{ctl.Policy{}, nil},
		{ctl.Policy{BW: 0.5, BWStrict: true}, []string{"--bw=0.5", "--bw-strict"}},
		{ctl.Policy{Class: ctl.ClassLS, BW: 0.25}, []string{"--ls", "--bw=0.25"}},
	} {
		if got := tc.p.RunArgs(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestEveryPolicyFieldInBlock: each field of a class's policy, set alone,
// comes back from the block Apply wrote it into, so a field added to
// ctl.Policy is carried by the block, or this names it.
func TestEveryPolicyFieldInBlock(t *testing.T) {
	dir := t.TempDir()
	floor := topo.Enable{}
	for i := range 12 {
		floor = floor.Set(i)
	}
	for _, class := range ctltest.Classes {
		for _, f := range ctl.PolicyFields() {
			if !ctltest.For(class, f) {
				continue
			}
			p, err := ctltest.WithField(class, f)
			if err != nil {
				t.Fatal(err)
			}
			in := ctl.Init{PID: 2000, Parts: []ctl.Part{{Mask: floor.Disable(), Live: floor}}}
			if p.Floor > 0 {
				in.Parts[0].Floor = floor
			}
			p.Apply(&in)
			h, err := ctl.Create(dir, in)
			if err != nil {
				t.Fatal(err)
			}
			got := h.Snapshot().Policy()
			h.Close()
			if got != p {
				t.Errorf("Policy.%s: the block of %+v gives back %+v (Apply and Snapshot.Policy carry every field)", f.Name, p, got)
			}
		}
	}
}
