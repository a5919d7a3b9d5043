// What ctl's own tests reach inside the package.

package ctl

// BlockOf is the block h maps, for tests that play a shim's part.
func BlockOf(h *Handle) *Block { return h.b }
