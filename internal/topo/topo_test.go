// Tests of discover.go against recorded GPUs played back by fake.go (dead
// bits, MPS refused), of topo.go's validation and the recorded H100's
// layout, and of cache.go.

package topo

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDiscoverReproducesRecorded plays each recorded GPU (the H100, the
// H200) back through the fake prober: discovery must find the same TPCs,
// SMs and GPC grouping, in the same logical order, without ever launching
// a mask that would hang.
func TestDiscoverReproducesRecorded(t *testing.T) {
	for _, name := range []string{"h100.json", "h200.json"} {
		t.Run(name, func(t *testing.T) { discoverReproduces(t, loadRecording(t, name)) })
	}
}

func discoverReproduces(t *testing.T, want *Topology) {
	for seed := uint64(1); seed <= 3; seed++ {
		f := &Fake{Top: want, Rand: rand.New(rand.NewPCG(seed, 0))}
		lay, err := Discover(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tpcs, gpcs := Build(lay.BitSMs, lay.GPCOf)
		if !reflect.DeepEqual(tpcs, want.TPCs) || !reflect.DeepEqual(gpcs, want.GPCs) {
			t.Fatalf("seed %d: discovered\n%v\n%v\nrecorded\n%v\n%v", seed, tpcs, gpcs, want.TPCs, want.GPCs)
		}
		if f.Runs < MaskBits {
			t.Errorf("only %d probe launches", f.Runs)
		}
	}
}

func TestDiscoverUnderMPSIsRefused(t *testing.T) {
	f := &Fake{Top: loadRecorded(t), Rand: rand.New(rand.NewPCG(1, 1)), Virtual: true}
	_, err := Discover(f, Options{})
	if !errors.Is(err, ErrSMIDVirtualized) {
		t.Fatalf("err = %v, want ErrSMIDVirtualized", err)
	}
}

// A GPU whose bit 0 is dead: discovery must pick another anchor, not hang.
func TestDiscoverWithDeadBitZero(t *testing.T) {
	rec := loadRecorded(t)
	bitSMs, gpc := map[int][]int{}, map[int]int{}
	for _, p := range rec.TPCs[1:] { // drop the TPC behind bit 0 and renumber SMs
		bitSMs[p.Bit] = p.SMs
		gpc[p.Bit] = p.GPC
	}
	tpcs, gpcs := Build(bitSMs, gpc)
	top := &Topology{SMCount: rec.SMCount, TPCs: tpcs, GPCs: gpcs}
	renumber(top)
	f := &Fake{Top: top, Rand: rand.New(rand.NewPCG(2, 2))}
	lay, err := Discover(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lay.BitSMs[0]; ok || len(lay.BitSMs) != len(rec.TPCs)-1 {
		t.Errorf("found %d live bits (bit 0 live: %v)", len(lay.BitSMs), ok)
	}
}

// renumber makes SM ids dense again after TPCs were removed.
func renumber(t *Topology) {
	n := 0
	for i := range t.TPCs {
		for j := range t.TPCs[i].SMs {
			t.TPCs[i].SMs[j] = n
			n++
		}
	}
	t.SMCount = n
}

func TestValidate(t *testing.T) {
	good := loadRecorded(t)
	for _, tc := range []struct {
		name   string
		break_ func(*Topology)
		err    string
	}{
		{"no TPCs", func(t *Topology) { t.TPCs = nil }, "no live TPC"},
		{"repeated bit", func(t *Topology) { t.TPCs[1].Bit = t.TPCs[0].Bit }, "repeated mask bit"},
		{"bit out of range", func(t *Topology) { t.TPCs[0].Bit = 128 }, "bad or repeated"},
		{"shared SM", func(t *Topology) { t.TPCs[1].SMs = t.TPCs[0].SMs }, "belongs to two TPCs"},
		{"bad index", func(t *Topology) { t.TPCs[3].Index = 7 }, "has index"},
		{"GPC lists foreign TPC", func(t *Topology) { t.GPCs[0].TPCs = append(t.GPCs[0].TPCs, 10) }, "not in it"},
		{"SM count", func(t *Topology) { t.SMCount = 130 }, "cover 132 SMs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(good)
			var c Topology
			json.Unmarshal(b, &c)
			tc.break_(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Validate = %v, want %q", err, tc.err)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Errorf("recorded topology invalid: %v", err)
	}
}

func TestRecordedH100(t *testing.T) {
	top := loadRecorded(t)
	if len(top.TPCs) != 66 || top.SMCount != 132 || top.Live().Count() != 66 {
		t.Fatalf("%s", top.Summary())
	}
	// the live bits HARDWARE.md lists, with the four past 72 this recording found
	var want Enable
	for _, r := range [][2]int{{0, 3}, {9, 16}, {18, 25}, {27, 34}, {36, 43}, {45, 52}, {54, 71}} {
		for b := r[0]; b <= r[1]; b++ {
			want = want.Set(b)
		}
	}
	for _, b := range []int{75, 78, 81, 83} {
		want = want.Set(b)
	}
	if top.Live() != want {
		t.Errorf("live %v, want %v", top.Live(), want)
	}
	if got := top.Summary(); got != "66 TPCs in 12 GPCs (1-9 each)" {
		t.Errorf("summary %q", got)
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CARVE_CACHE_DIR", dir)
	top := loadRecorded(t)
	p := CachePath(dir, top.UUID, "580.159.04")
	if got, err := ReadCache(p); got != nil || err != nil {
		t.Fatalf("empty cache: %v %v", got, err)
	}
	if err := WriteCache(p, top); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCache(p)
	if err != nil || !reflect.DeepEqual(got, top) {
		t.Fatalf("read back: %v", err)
	}
	found, err := FindCached(top.Live())
	if err != nil || found == nil || found.UUID != top.UUID {
		t.Fatalf("FindCached: %v %v", found, err)
	}
	if found, _ := FindCached(Enable{1}); found != nil {
		t.Errorf("FindCached matched a foreign live mask")
	}
	os.WriteFile(p, []byte("{"), 0o644)
	if _, err := ReadCache(p); err == nil || !strings.Contains(err.Error(), "--refresh") {
		t.Errorf("corrupt cache: %v", err)
	}
	if filepath.Dir(p) != dir || strings.ContainsAny(filepath.Base(CachePath(dir, "a/b", "c d")), "/ ") {
		t.Errorf("cache path not sanitized")
	}
}
