// What ctl's own tests reach inside the package.

package ctl

// BlockOf is the block h maps, for tests that play a shim's part.
func BlockOf(h *Handle) *Block { return h.b }

// SnapshotGuarded reads h's block as listings do, a fault made an error.
func SnapshotGuarded(h *Handle) error { return guarded(h.Path, func() { h.Snapshot() }) }
