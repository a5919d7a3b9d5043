// TPC masks: Enable, a set of TPC bits that are on, and Disable, the
// hardware mask a launch is given to keep off the TPCs of its set bits.

package topo

import (
	"fmt"
	"math/bits"
)

// The two kinds of 128-bit TPC mask carve handles, word 0 holding bits
// 0-31. They are distinct types so that one is never taken for the other:
// carve works in enable sets, and the hardware (a launch descriptor, a
// control block's mask) takes disable masks. This file is the only one
// that turns one into the other, and, with the mirrors of the shim's
// structs, the only one that names their raw words
// (internal/layering_test.go checks it).

// MaskBits is the width of the hardware TPC mask (Hopper descriptors).
const MaskBits = 128

// Enable is a set of TPC mask bits that are on: a partition's TPCs, a
// GPU's live ones, a BE floor, the TPCs LS tenants keep off.
type Enable [4]uint32

// Disable is a hardware TPC-disable mask: a launch given it keeps off the
// TPCs of its set bits.
type Disable [4]uint32

// Set returns e with bit b set.
func (e Enable) Set(b int) Enable { e[b/32] |= 1 << (b % 32); return e }

// Has reports whether bit b is set.
func (e Enable) Has(b int) bool { return e[b/32]>>(b%32)&1 == 1 }

// Count is the number of set bits.
func (e Enable) Count() int {
	n := 0
	for _, w := range e {
		n += bits.OnesCount32(w)
	}
	return n
}

// And is the intersection.
func (e Enable) And(o Enable) Enable {
	return Enable{e[0] & o[0], e[1] & o[1], e[2] & o[2], e[3] & o[3]}
}

// Or is the union.
func (e Enable) Or(o Enable) Enable {
	return Enable{e[0] | o[0], e[1] | o[1], e[2] | o[2], e[3] | o[3]}
}

// Without is e's bits but o's.
func (e Enable) Without(o Enable) Enable {
	return Enable{e[0] &^ o[0], e[1] &^ o[1], e[2] &^ o[2], e[3] &^ o[3]}
}

// Disable is the mask that keeps a launch to exactly e's bits.
func (e Enable) Disable() Disable { return Disable{^e[0], ^e[1], ^e[2], ^e[3]} }

// String is the mask as 32 hex digits, most significant word first.
func (e Enable) String() string { return hex(e) }

// Set returns d with bit b set (that TPC disabled).
func (d Disable) Set(b int) Disable { d[b/32] |= 1 << (b % 32); return d }

// Has reports whether bit b is set (that TPC disabled).
func (d Disable) Has(b int) bool { return d[b/32]>>(b%32)&1 == 1 }

// Enable is the set of bits d leaves on, over all 128 (live or not).
func (d Disable) Enable() Enable { return Enable{^d[0], ^d[1], ^d[2], ^d[3]} }

// String is the mask as 32 hex digits, most significant word first.
func (d Disable) String() string { return hex(d) }

func hex(w [4]uint32) string { return fmt.Sprintf("%08x%08x%08x%08x", w[3], w[2], w[1], w[0]) }
