// The memory account of a tenant's ended processes (account.go): what a scan
// of the runtime directory credits, and when it removes the account; Peek
// credits and removes nothing.

package ctl_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestScanKeepsTheAccount: the block of a tenant's first process, the
// memory account of its children, stays while a child runs, though its own
// process has ended; what ended processes held goes back to their account.
func TestScanKeepsTheAccount(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	acct, err := ctl.Create(dir, ctl.Init{PID: dead, MemLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer acct.Close()
	kid, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Tenant: dead})
	if err != nil {
		t.Fatal(err)
	}
	defer kid.Close()
	a, k := ctl.BlockOf(acct), ctl.BlockOf(kid)
	a.MemUsed, a.MemTotal = 30, 50
	k.MemUsed = 20

	live, err := ctl.List(dir)
	if err != nil || len(live) != 1 || live[0].PID != os.Getpid() {
		t.Fatalf("List: %v, %v; want this process alone", live, err)
	}
	if _, err := os.Stat(acct.Path); err != nil {
		t.Errorf("the account of a running child was removed: %v", err)
	}
	if m := acct.Snapshot().Memory; m.Used != 0 || m.Total != 20 {
		t.Errorf("the account after its own process ended: %+v, want its 30 bytes credited, the child's 20 left", m)
	}

	// the child ends too: its 20 bytes go back, and both blocks go
	k.PID = uint32(dead + 1<<22) // a pid no process has
	k.StartTicks = 1
	if n, err := ctl.CreditEnded(dir); err != nil || n != 20 {
		t.Errorf("CreditEnded: %d, %v; want the child's 20", n, err)
	}
	if m := acct.Snapshot().Memory; m.Total != 0 {
		t.Errorf("the account after both ended: %+v", m)
	}
	k.Tenant = 0
	if _, err := ctl.List(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(acct.Path); !os.IsNotExist(err) {
		t.Errorf("the account of ended processes only is still there: %v", err)
	}
}

// TestPeekChangesNothing: Peek lists what Read lists, and leaves the block
// of an ended process and what it held as they are; Read then credits
// and removes them.
func TestPeekChangesNothing(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	acct, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), MemLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer acct.Close()
	dead, err := ctl.Create(dir, ctl.Init{PID: gone.Process.Pid, Tenant: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	ctl.BlockOf(acct).MemTotal = 50
	ctl.BlockOf(dead).MemUsed = 20

	l, err := ctl.Peek(dir)
	if err != nil || len(l.Live) != 1 || l.Live[0].PID != os.Getpid() {
		t.Fatalf("Peek: %+v, %v; want this process alone", l.Live, err)
	}
	if _, err := os.Stat(dead.Path); err != nil {
		t.Errorf("Peek removed the ended block: %v", err)
	}
	if m := acct.Snapshot().Memory; m.Total != 50 {
		t.Errorf("the account after Peek: %+v, want nothing credited", m)
	}
	if _, err := ctl.Read(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead.Path); !os.IsNotExist(err) {
		t.Errorf("Read left the ended block: %v", err)
	}
	if m := acct.Snapshot().Memory; m.Total != 30 {
		t.Errorf("the account after Read: %+v, want its 20 bytes credited", m)
	}
}
