// A fuzz target of claim configs: any bytes are parsed (ParseConfig) and
// resolved (Resolve) or refused with an error, never a panic, and a
// config that parses and resolves is written back (MarshalJSON) as one
// that parses and resolves to the same.

package v1alpha1

import (
	"encoding/json"
	"reflect"
	"testing"
)

func FuzzClaimConfig(f *testing.F) {
	const head = `{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig"`
	for _, s := range []string{
		head + `}`,
		head + `, "class": "ls", "own": true, "memory": "12G"}`,
		head + `, "class": "be", "inflight": 4, "queue": "1ms", "beShare": 0.25, "beFloor": 8, "slice": "2ms", "mps": false}`,
		head + `, "class": "none", "allowUnpartitioned": true, "allSMs": true, "connections": 4, "memory": "25%"}`,
		head + `, "epoch": "soon"}`,
		`["class", "ls"]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseConfig(raw)
		if err != nil {
			return
		}
		s, err := Resolve([]*ClaimConfig{c})
		if err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%s: parsed and resolved, but not written: %v", raw, err)
		}
		back, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("%s: written as %s, which does not parse: %v", raw, out, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("%s: written as %s, read back as %+v, want %+v", raw, out, back, c)
		}
		s2, err := Resolve([]*ClaimConfig{back})
		if err != nil || s2 != s {
			t.Fatalf("%s: written as %s, resolves to %+v (%v), want %+v", raw, out, s2, err, s)
		}
	})
}
