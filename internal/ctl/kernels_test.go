// Tests of kernels.go: a kernel table's JSON read and checked, its
// compact form, and the file Create writes of it beside a block.

package ctl_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

const goodTable = `{"gpu": "NVIDIA H100 80GB HBM3", "kernels": {
  "_Z6stream": {"bytes": 536870912, "ns": 230000, "pct": 84.5},
  "_Z6fma256": {"bytes": 1024, "ns": 500000, "pct": 21}}}`

func TestParseKernelTable(t *testing.T) {
	k, err := ctl.ParseKernelTable([]byte(goodTable))
	if err != nil {
		t.Fatal(err)
	}
	if k.GPU != "NVIDIA H100 80GB HBM3" || len(k.Kernels) != 2 || k.Kernels["_Z6stream"].Bytes != 512<<20 || k.ComputeBound() != 1 {
		t.Errorf("table %+v", k)
	}
	if !k.Kernels["_Z6fma256"].ComputeBound() || k.Kernels["_Z6stream"].ComputeBound() {
		t.Errorf("compute-bound: fma256 %v, stream %v", k.Kernels["_Z6fma256"].ComputeBound(), k.Kernels["_Z6stream"].ComputeBound())
	}
	if k, err := ctl.ParseKernelTable([]byte(`{"gpu": "x"}`)); err != nil || k.Kernels == nil {
		t.Errorf("a table of no kernels: %+v, %v", k, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"gpu": "x", "kernels": {}} {}`, `{"gpu": "x", "other": 1}`,
		`{"kernels": {"": {"bytes": 1}}}`,
		`{"kernels": {"a\u0000b": {"bytes": 1}}}`,
		`{"kernels": {"k": {"bytes": -1}}}`,
		`{"kernels": {"k": {"pct": -1}}}`,
		`{"kernels": {"k": {"pct": 1001}}}`,
		`{"kernels": {"k": {"bytes": 1, "extra": 2}}}`,
		`{"gpu": "a\nb"}`,
		`{"kernels": {"` + strings.Repeat("x", ctl.MaxKernelName+1) + `": {}}}`,
	} {
		if _, err := ctl.ParseKernelTable([]byte(bad)); err == nil {
			t.Errorf("%.80q parsed", bad)
		}
	}
	var many strings.Builder
	many.WriteString(`{"kernels": {`)
	for i := range ctl.MaxKernels + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + strconv.Itoa(i) + `": {}`)
	}
	many.WriteString("}}")
	if _, err := ctl.ParseKernelTable([]byte(many.String())); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d kernels: %v", ctl.MaxKernels+1, err)
	}
}

// TestKernelTableCompact: the compact form is the head and the entries
// in order of their names' hashes, compute-bound ones flagged, and its id
// the hash of the entries; Create writes it beside the block, which names
// its id and the table's path.
func TestKernelTableCompact(t *testing.T) {
	k, err := ctl.ParseKernelTable([]byte(goodTable))
	if err != nil {
		t.Fatal(err)
	}
	b, id, err := k.Compact()
	if err != nil {
		t.Fatal(err)
	}
	var h ctl.KernHead
	e := make([]ctl.KernEntry, 2)
	r := bytes.NewReader(b)
	if binary.Read(r, binary.LittleEndian, &h) != nil || binary.Read(r, binary.LittleEndian, e) != nil || r.Len() != 0 {
		t.Fatalf("compact table of %d bytes", len(b))
	}
	if h.Magic != ctl.KernMagic || h.Count != 2 || h.ID != id || id == 0 || e[0].Name >= e[1].Name {
		t.Errorf("head %+v, entries %+v, id %x", h, e, id)
	}
	for _, x := range e {
		want := map[uint64]ctl.KernEntry{ctl.KernelHash("_Z6stream"): {Bytes: 512 << 20}, ctl.KernelHash("_Z6fma256"): {Bytes: 1024, Flags: ctl.KernCompute}}[x.Name]
		if want.Bytes != x.Bytes || want.Flags != x.Flags {
			t.Errorf("entry %+v, want %+v", x, want)
		}
	}
	if ctl.KernelHash("") != 0xcbf29ce484222325 || ctl.KernelHash("a") != 0xaf63dc4c8601ec8c { // FNV-1a's own values
		t.Errorf("FNV-1a of \"\" %x, of \"a\" %x", ctl.KernelHash(""), ctl.KernelHash("a"))
	}
	dir := t.TempDir()
	hd, err := ctl.Create(dir, ctl.Init{PID: 2100, Kernels: ctl.Kernels{Path: "/t/k.json", Table: k}})
	if err != nil {
		t.Fatal(err)
	}
	s := hd.Snapshot()
	hd.Close()
	if s.Kernels != "/t/k.json" || s.KernelsID != id {
		t.Errorf("block names %q, id %x; want /t/k.json, %x", s.Kernels, s.KernelsID, id)
	}
	got, err := os.ReadFile(filepath.Join(dir, ctl.KernelsFile(id)))
	if err != nil || !bytes.Equal(got, b) {
		t.Errorf("the compact file beside the block: %v", err)
	}
	if _, err := ctl.Create(dir, ctl.Init{PID: 2101, Kernels: ctl.Kernels{Path: "/" + strings.Repeat("k", 127)}}); err == nil {
		t.Error("a path longer than the block holds was taken")
	}
	// another user's file of the name (in a shared directory) is not taken
	if os.Getuid() == 0 {
		os.Chown(filepath.Join(dir, ctl.KernelsFile(id)), 12345, 12345)
		if _, err := ctl.Create(dir, ctl.Init{PID: 2102, Kernels: ctl.Kernels{Table: k}}); err == nil || !strings.Contains(err.Error(), "belongs to uid 12345") {
			t.Errorf("another user's compact table: %v", err)
		}
	}
}

func TestReadKernelTable(t *testing.T) {
	dir := t.TempDir()
	k, _ := ctl.ParseKernelTable([]byte(goodTable))
	path := filepath.Join(dir, "k.json")
	if err := k.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := ctl.ReadKernelTable(path)
	if err != nil || back.GPU != k.GPU || len(back.Kernels) != 2 || back.Kernels["_Z6stream"] != k.Kernels["_Z6stream"] {
		t.Errorf("read back %+v, %v", back, err)
	}
	os.WriteFile(path, []byte(`{"gpu": 7}`), 0o644)
	if _, err := ctl.ReadKernelTable(path); err == nil || !strings.Contains(err.Error(), "is not a kernel table") {
		t.Errorf("a bad table: %v", err)
	}
}
