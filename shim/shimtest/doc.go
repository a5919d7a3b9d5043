// Package shimtest holds the tests of the shim (libcarve.so, shim/*.c), in
// its external test package: one file per concept of the shim, each run
// against the fake driver (shim/fake) and the driver program
// (shim/test/driver), which internal/shimtest builds, on the virtual clock
// where timing matters. It has no code of its own.
package shimtest
