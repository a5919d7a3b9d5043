package ctl

import "sync/atomic"

// BusyBits is the node block's busy field, for tests.
func (n *Node) BusyBits() uint32 { return atomic.LoadUint32(&n.b.Busy) }

// BlockOf is the block h maps, for tests that play a shim's part.
func BlockOf(h *Handle) *Block { return h.b }
