package ctl

import "sync/atomic"

// BusyBits is the node block's busy field, for tests.
func (n *Node) BusyBits() uint32 { return atomic.LoadUint32(&n.b.Busy) }
