// Package ctltest holds what tests of ctl's users share: a policy with
// one field set, for the tests that check each field of ctl.Policy in turn
// (carve run's flags, the control block), and a process that holds a
// block's lock as a running tenant's shim does (HoldLock), and the LS file
// of a node block's seat (LSFile), and a block mapped as its shim maps it
// (MapBlock) or made for a process that has ended (EndedBlock), and a
// live process for a test's block to name (Sleeper).
package ctltest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/topo"
)

// Classes are the classes a field may be for, each with its fields.
var Classes = []uint32{ctl.ClassLS, ctl.ClassBE, ctl.ClassNone}

// WithField is a normalized policy of class with f set to a value of its
// type that Normalize takes and the defaults leave unset (a BE's epoch
// aside), or an error naming a field whose type it has no value for.
func WithField(class uint32, f ctl.PolicyField) (ctl.Policy, error) {
	p := ctl.Policy{Class: class}
	if class == ctl.ClassBE {
		p.Epoch = ctl.DefaultPolicy.Epoch
	}
	switch v := f.Addr(&p).(type) {
	case *bool:
		*v = true
		if f.Name == "BWStrict" { // a strict share needs a share
			p.BW = 0.5
		}
	case *int:
		*v = 12
	case *float64:
		*v = 0.5
	case *string:
		*v = "/var/lib/carve/kernels.json"
	case *time.Duration:
		*v = 2 * time.Millisecond
	case *ctl.MemLimit:
		*v = ctl.MemLimit{Bytes: 3 << 30}
	case *ctl.SLO:
		*v = ctl.SLO{Max: 8 * time.Millisecond}
	default:
		return p, fmt.Errorf("ctl.Policy.%s: ctltest has no value for a %T", f.Name, v)
	}
	return p, p.Normalize(ctl.FieldNames)
}

// For says whether f is a field of class's policy.
func For(class uint32, f ctl.PolicyField) bool { return f.For == "" || f.For == ctl.ClassName(class) }

// LSFile is seat i's LS file on the node block name in dir, as the seat
// table names it now.
func LSFile(t *testing.T, dir, name string, i int) string {
	t.Helper()
	n, err := ctl.OpenNode(dir, name, topo.Enable{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	return n.LSPath(i)
}

// MapBlock maps the block file path as the shim does, for a test to play
// the shim's part in it (count its launches, record its busy periods),
// until the test ends.
func MapBlock(t testing.TB, path string) *ctl.Block {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, ctl.Size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return (*ctl.Block)(unsafe.Pointer(&mem[0]))
}

// EndedBlock makes in dir the block of a process that has run and ended.
func EndedBlock(t testing.TB, dir string) *ctl.Handle {
	t.Helper()
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h, err := ctl.Create(dir, ctl.Init{PID: c.Process.Pid})
	c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Sleeper starts a process that lives until the test ends, or kill: a
// live pid for a block the test makes.
func Sleeper(t testing.TB) (pid int, kill func()) {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	kill = func() { c.Process.Kill(); c.Wait() }
	t.Cleanup(kill)
	return c.Process.Pid, kill
}
