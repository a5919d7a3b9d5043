// Package tmd knows where the TPC-disable mask sits in a kernel launch
// descriptor. It mirrors shim/carve_tmd.h; TestMirrorsHeader keeps the two
// equal.
package tmd

import (
	"encoding/binary"
	"unsafe"

	"github.com/carve-gpu/carve/internal/topo"
)

// Offsets and versions, as in shim/carve_tmd.h.
const (
	ParamsMinSize       = 40
	ParamsTMDOffset     = 32
	ParamsCtxOffset     = 8 // the launch's context
	VersionOffset       = 72
	VHopper             = 0x40
	VVolta              = 0x16
	HopperMaskOffset    = 304
	HopperEnableOffset  = 0
	HopperEnableBit     = 31
	VoltaMaskOffset     = 84
	hopperDescriptorLen = HopperMaskOffset + 16
)

// What slicing edits, in descriptor version VSlice alone, as in
// shim/carve_tmd.h: the grid's width and the code's address, with its
// program prefetch address (the code's address shifted right by at most
// PrefetchShiftMax). Each is a 32-bit word and the low HiBits of the next.
const (
	ParamsFuncOffset = 24 // the launch's function
	VSlice           = 0x40
	GridWidthOffset  = 128
	ProgramOffset    = 152
	ProgramHiBits    = 25
	PrefetchOffset   = 168
	PrefetchHiBits   = 17
	PrefetchShiftMax = 12
)

// field64 reads a 32-bit word at off and hi bits of the next.
func field64(d []byte, off, hi int) uint64 {
	return uint64(binary.LittleEndian.Uint32(d[off:])) | uint64(binary.LittleEndian.Uint32(d[off+4:])&(1<<hi-1))<<32
}

// Program is the code's address in a version VSlice descriptor.
func Program(d []byte) uint64 { return field64(d, ProgramOffset, ProgramHiBits) }

// Prefetch is the program prefetch address (shifted) in a version VSlice
// descriptor.
func Prefetch(d []byte) uint64 { return field64(d, PrefetchOffset, PrefetchHiBits) }

// GridWidth is the grid's width (gridDim.x, or less where it ends early).
func GridWidth(d []byte) uint32 { return binary.LittleEndian.Uint32(d[GridWidthOffset:]) }

// FromParams returns the descriptor the launch callback's params point to,
// or nil when the params are too short to hold one.
func FromParams(params unsafe.Pointer) []byte {
	size := *(*uint32)(params)
	if size < ParamsMinSize {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Add(params, ParamsTMDOffset))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), hopperDescriptorLen)
}

// Version is the descriptor's version byte.
func Version(d []byte) int { return int(d[VersionOffset]) }

// WriteMask writes a 128-bit TPC-disable mask; false for unknown versions.
func WriteMask(d []byte, mask topo.Disable) bool {
	switch v := Version(d); {
	case v >= VHopper:
		for i, w := range mask {
			binary.LittleEndian.PutUint32(d[HopperMaskOffset+4*i:], w)
		}
		e := binary.LittleEndian.Uint32(d[HopperEnableOffset:])
		binary.LittleEndian.PutUint32(d[HopperEnableOffset:], e|1<<HopperEnableBit)
		return true
	case v >= VVolta:
		binary.LittleEndian.PutUint32(d[VoltaMaskOffset:], mask[0])
		binary.LittleEndian.PutUint32(d[VoltaMaskOffset+4:], mask[1])
		return true
	}
	return false
}
