// The memory account of a tenant's ended processes (account.go): what a scan
// of the runtime directory credits, and when it removes the account.

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
