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
