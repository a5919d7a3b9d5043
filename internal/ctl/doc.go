// Package ctl is carve's side of the control blocks shared with libcarve.so:
// one small file per partitioned process, mapped by both, holding the
// process's TPC mask and the shim's counters. The layout is defined in
// shim/carve_ctl.h; Block mirrors it and TestLayoutMatchesHeader checks it.
// It knows blocks, not TPCs: turning specs into masks is internal/partition's.
package ctl
