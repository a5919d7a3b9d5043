// Package place puts partitions on GPUs so that concurrent starts never
// overlap by accident: reading the live partitions, choosing TPCs and
// registering the new partition's control block happen under one lock per
// runtime directory. A tenant may have a partition on several GPUs: each
// is chosen on its GPU as a tenant of that GPU alone would be, and all are
// registered in one block, or none is. The lock is an flock, which the kernel lets go of when
// its holder dies, so a killed carve never keeps it.
//
// A partition overlaps another only when asked to (Share): a count that
// does not fit in the free TPCs fails and says how many are free; a list
// of TPCs or GPCs that meets a live partition fails and names it. Blocks of
// one tenant (a program and the child processes that copied its block) are
// one partition. Under the same lock the tenants' memory limits are
// counted against the GPU's memory (memcharge.go). Place knows the live
// partitions from the control blocks alone, so it keeps no state of its own
// and survives any restart.
package place
