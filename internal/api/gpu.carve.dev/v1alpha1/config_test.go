// Tests of ClaimConfig: every field of ctl.Policy with a config tag is a
// field of the config, and what ParseConfig and Resolve refuse, by name.

package v1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestEveryPolicyFieldIsConfigured: each field of ctl.Policy that has a
// config tag is taken from a config by that name, resolved into the
// policy, and written back by MarshalJSON, so that a field added to
// ctl.Policy with its tag needs nothing more here.
func TestEveryPolicyFieldIsConfigured(t *testing.T) {
	pt := reflect.TypeFor[ctl.Policy]()
	n := 0
	for i := range pt.NumField() {
		f := pt.Field(i)
		name := f.Tag.Get("config")
		if name == "" {
			if f.Name != "Class" { // a claim config's own field, "class"
				t.Errorf("ctl.Policy.%s has no config tag: a claim cannot set it", f.Name)
			}
			continue
		}
		n++
		var written any
		var want any
		switch {
		case f.Type == reflect.TypeFor[ctl.MemLimit]():
			written, want = "25%", ctl.MemLimit{Percent: 25}
		case f.Type == reflect.TypeFor[ctl.SLO]():
			written, want = "8ms", ctl.SLO{Max: 8 * time.Millisecond}
		case f.Type == reflect.TypeFor[time.Duration]():
			written, want = "2ms", 2*time.Millisecond
		case f.Type.Kind() == reflect.Bool:
			written, want = true, true
		case f.Type.Kind() == reflect.Int:
			written, want = 16, 16
		case f.Type.Kind() == reflect.Float64:
			written, want = 0.5, 0.5
		case f.Type.Kind() == reflect.String:
			written, want = "/var/lib/carve/kernels.json", "/var/lib/carve/kernels.json"
		default:
			t.Errorf("ctl.Policy.%s (config %q) is a %s: give the config its JSON (policy.go) and this test a value", f.Name, name, f.Type)
			continue
		}
		class := f.Tag.Get("for")
		if class == "" {
			class = "none"
		}
		m := map[string]any{"apiVersion": APIVersion, "kind": Kind, "class": class, name: written}
		switch f.Name { // a strict share needs a share, and a claim's share is strict
		case "BWStrict":
			m[ctl.PolicyFieldNamed("BW").Config] = 0.5
		case "BW":
			m[ctl.PolicyFieldNamed("BWStrict").Config] = true
		}
		raw, _ := json.Marshal(m)
		c, err := ParseConfig(raw)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		s, err := Resolve([]*ClaimConfig{c})
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if got := reflect.ValueOf(s.Policy).Field(i).Interface(); !reflect.DeepEqual(got, reflect.ValueOf(want).Convert(f.Type).Interface()) {
			t.Errorf("%s: Policy.%s = %v, want %v", raw, f.Name, got, want)
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Errorf("%s: marshal: %v", raw, err)
			continue
		}
		if c2, err := ParseConfig(again); err != nil || !reflect.DeepEqual(c2, c) {
			t.Errorf("%s written as %s, read back as %+v (%v)", raw, again, c2, err)
		}
	}
	if n != len(policyFields) || n == 0 {
		t.Errorf("%d fields of ctl.Policy have a config tag, and the config has %d", n, len(policyFields))
	}
}

// TestRefused: what ParseConfig and Resolve refuse, and the messages,
// which name the config's fields as the config spells them.
func TestRefused(t *testing.T) {
	const head = `{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig"`
	for _, tc := range []struct{ raw, want string }{
		{head + `, "clas": "ls"}`, `ClaimConfig: json: unknown field "clas"`},
		{head + `, "bandwidth": 0.5}`, "bandwidth 0.5: a claim's share must be strict (bandwidthStrict: true): its tenant cannot see other claims' wants, only keep to its slot"},
		{head + `, "inflight": "8"}`, "ClaimConfig: json: cannot unmarshal string into Go struct field ClaimConfig.inflight of type int"},
		{head + `, "allSMs": 1}`, "ClaimConfig: json: cannot unmarshal number into Go struct field ClaimConfig.allSMs of type bool"},
		{`["class", "ls"]`, "ClaimConfig: json: cannot unmarshal array into Go value of type v1alpha1.ClaimConfig"},
		{head + `, "epoch": "soon"}`, `ClaimConfig: time: invalid duration "soon"`},
		{`{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "Config"}`, `config of apiVersion "gpu.carve.dev/v1alpha1" and kind "Config": want gpu.carve.dev/v1alpha1, ClaimConfig`},
		{head + `, "memory": "lots"}`, "memory: "},
		{head + `, "class": "ls", "beShare": 0.5}`, "beShare is for BE tenants"},
		{head + `, "class": "be", "beFloor": 2}`, "beFloor: a BE floor of 2 TPCs"},
		{head + `, "class": "be", "slice": "1us"}`, "slice: pieces of 1µs"},
		{head + `, "class": "ls", "own": true, "connections": 0}`, "connections 0: want 1 to"},
		{head + `, "class": "gold"}`, "gold"},
	} {
		c, err := ParseConfig([]byte(tc.raw))
		if err == nil {
			_, err = Resolve([]*ClaimConfig{c})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.raw, err, tc.want)
		}
	}
}

// TestResolveInOrder: a later config (the claim's) overrides an earlier
// one (its class's) field by field, over the defaults.
func TestResolveInOrder(t *testing.T) {
	class, err := ParseConfig([]byte(`{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig", "class": "be", "inflight": 4, "queue": "1ms", "mps": false}`))
	if err != nil {
		t.Fatal(err)
	}
	claim, err := ParseConfig([]byte(`{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig", "inflight": 2, "memory": "12G"}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Resolve([]*ClaimConfig{class, claim})
	if err != nil {
		t.Fatal(err)
	}
	want := ctl.DefaultPolicy
	want.Class, want.Inflight, want.Queue, want.Mem = ctl.ClassBE, 2, time.Millisecond, ctl.MemLimit{Bytes: 12 << 30}
	if s.Policy != want || s.MPS || s.Connections != 8 {
		t.Errorf("got %+v, want policy %+v without MPS, 8 connections", s, want)
	}
}
