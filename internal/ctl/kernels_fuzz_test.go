// FuzzKernelTable: a kernel table's JSON of any bytes (--kernels, a
// claim's config) never panics; what parses is within the bounds, writes
// a compact form of its kernels, and reads back the same from its JSON.

package ctl

import (
	"encoding/json"
	"reflect"
	"testing"
)

func FuzzKernelTable(f *testing.F) {
	for _, s := range []string{
		`{"gpu": "NVIDIA H100 80GB HBM3", "kernels": {"_Z4copyPfS_": {"bytes": 536870912, "ns": 230000, "pct": 84.5}}}`,
		`{"gpu": "x", "kernels": {}}`, `{}`, `{"kernels": {"k": {"pct": 1000}}}`, `{"kernels": {"k": {"pct": 1e400}}}`,
		`{"kernels": {"\u00e9": {"bytes": 18446744073709551615}}}`, `{"gpu": "\ud800"}`, `null`, `{"kernels": null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKernelTable(b)
		if err != nil {
			return
		}
		if len(k.Kernels) > MaxKernels || len(k.GPU) > 256 {
			t.Fatalf("%d kernels, GPU name of %d bytes", len(k.Kernels), len(k.GPU))
		}
		c, id, err := k.Compact()
		if err == nil && (id == 0 || len(c) != 16+24*len(k.Kernels)) {
			t.Fatalf("compact form of %d bytes, id %x, for %d kernels", len(c), id, len(k.Kernels))
		}
		again, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseKernelTable(again)
		if err != nil || !reflect.DeepEqual(back, k) {
			t.Fatalf("%s reads back as %+v, %v", again, back, err)
		}
	})
}
