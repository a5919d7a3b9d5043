// Tests of tmd.go: its constants against shim/carve_tmd.h, the mask
// written into a launch descriptor, and the slicing fields against the
// bit ranges of QMD V04.

package tmd

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestMirrorsHeader checks every constant against shim/carve_tmd.h.
func TestMirrorsHeader(t *testing.T) {
	src, err := os.ReadFile("../../shim/carve_tmd.h")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define CARVE_(\w+)\s+(0x[0-9a-fA-F]+|\d+)`).FindAllStringSubmatch(string(src), -1) {
		v, err := strconv.ParseInt(m[2], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		defs[m[1]] = int(v)
	}
	want := map[string]int{
		"PARAMS_MIN_SIZE":          ParamsMinSize,
		"PARAMS_TMD_OFFSET":        ParamsTMDOffset,
		"PARAMS_CTX_OFFSET":        ParamsCtxOffset,
		"TMD_VERSION_OFFSET":       VersionOffset,
		"TMD_V_HOPPER":             VHopper,
		"TMD_V_VOLTA":              VVolta,
		"TMD_HOPPER_MASK_OFFSET":   HopperMaskOffset,
		"TMD_HOPPER_ENABLE_OFFSET": HopperEnableOffset,
		"TMD_HOPPER_ENABLE_BIT":    HopperEnableBit,
		"TMD_VOLTA_MASK_OFFSET":    VoltaMaskOffset,
		"PARAMS_FUNC_OFFSET":       ParamsFuncOffset,
		"TMD_V_SLICE":              VSlice,
		"TMD_GRID_WIDTH_OFFSET":    GridWidthOffset,
		"TMD_PROGRAM_OFFSET":       ProgramOffset,
		"TMD_PROGRAM_HI_BITS":      ProgramHiBits,
		"TMD_PREFETCH_OFFSET":      PrefetchOffset,
		"TMD_PREFETCH_HI_BITS":     PrefetchHiBits,
		"TMD_PREFETCH_SHIFT_MAX":   PrefetchShiftMax,
	}
	if len(defs) != len(want) {
		t.Errorf("header defines %d constants, Go mirrors %d: %v", len(defs), len(want), defs)
	}
	for name, v := range want {
		got, ok := defs[name]
		if !ok {
			t.Errorf("CARVE_%s missing from the header", name)
		} else if got != v {
			t.Errorf("CARVE_%s: header %#x, Go %#x", name, got, v)
		}
	}
}

func TestWriteMask(t *testing.T) {
	mask := [4]uint32{0x11111111, 0x22222222, 0x33333333, 0x44444444}
	for _, tc := range []struct {
		version int
		ok      bool
	}{{0x40, true}, {0x41, true}, {0x16, true}, {0x3f, true}, {0x15, false}, {0, false}} {
		d := make([]byte, hopperDescriptorLen)
		d[VersionOffset] = byte(tc.version)
		if got := WriteMask(d, mask); got != tc.ok {
			t.Errorf("version %#x: WriteMask = %v, want %v", tc.version, got, tc.ok)
		}
		le := func(off int) uint32 {
			return uint32(d[off]) | uint32(d[off+1])<<8 | uint32(d[off+2])<<16 | uint32(d[off+3])<<24
		}
		switch {
		case tc.version >= VHopper:
			for i := range 4 {
				if le(HopperMaskOffset+4*i) != mask[i] {
					t.Errorf("version %#x: word %d = %#x", tc.version, i, le(HopperMaskOffset+4*i))
				}
			}
			if le(0)>>31 != 1 {
				t.Errorf("version %#x: enable bit not set", tc.version)
			}
		case tc.version >= VVolta:
			if le(VoltaMaskOffset) != mask[0] || le(VoltaMaskOffset+4) != mask[1] {
				t.Errorf("version %#x: volta words wrong", tc.version)
			}
			if le(0) != 0 {
				t.Errorf("version %#x: word 0 touched", tc.version)
			}
		}
	}
}

// TestSliceFieldsMatchQMD checks the slicing offsets against the bit
// ranges of QMD V04 that experiments/slicing proved on an H100
// (qmd_v04.h, from NVIDIA's clcbc0qmd.h).
func TestSliceFieldsMatchQMD(t *testing.T) {
	src, err := os.ReadFile("../../experiments/slicing/qmd_v04.h")
	if err != nil {
		t.Fatal(err)
	}
	bits := map[string][2]int{}
	for _, m := range regexp.MustCompile(`QMD_(\w+) = \{(\d+), (\d+)\}`).FindAllStringSubmatch(string(src), -1) {
		lo, _ := strconv.Atoi(m[2])
		hi, _ := strconv.Atoi(m[3])
		bits[m[1]] = [2]int{lo, hi}
	}
	for _, c := range []struct {
		field    string
		lo, bits int
	}{
		{"GRID_WIDTH", GridWidthOffset * 8, 32},
		{"PROGRAM_ADDRESS_LOWER", ProgramOffset * 8, 32},
		{"PROGRAM_ADDRESS_UPPER", ProgramOffset*8 + 32, ProgramHiBits},
		{"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", PrefetchOffset * 8, 32},
		{"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", PrefetchOffset*8 + 32, PrefetchHiBits},
	} {
		b, ok := bits[c.field]
		if !ok {
			t.Errorf("qmd_v04.h has no %s", c.field)
		} else if b != [2]int{c.lo, c.lo + c.bits - 1} {
			t.Errorf("%s: qmd_v04.h bits %d-%d, carve_tmd.h %d-%d", c.field, b[0], b[1], c.lo, c.lo+c.bits-1)
		}
	}
	d := make([]byte, hopperDescriptorLen)
	for i := range d {
		d[i] = 0xff
	}
	if Program(d) != 1<<(32+ProgramHiBits)-1 || GridWidth(d) != 0xffffffff || Prefetch(d) != 1<<(32+PrefetchHiBits)-1 {
		t.Errorf("fields of a descriptor of ones: program %#x, width %#x, prefetch %#x", Program(d), GridWidth(d), Prefetch(d))
	}
}
