// Device memory: the shim (shim/mem.c) counts what each process holds in
// its block's MemUsed and, for all of a tenant's processes together, in
// the tenant's account block (MemTotal), where MemLimit is enforced: the
// block carve made for the tenant, a claim's root or else the block of the
// tenant's pid. A process counts in its own block where it cannot use
// that one; its block's MemTotal is then not zero, as an account's is
// wherever it holds memory.
//
// carve's side of the accounts: CreditEnded gives back what ended
// processes held, to the account each counted in.

package ctl

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
)

// CreditEnded gives back to their tenants' accounts the device memory that
// ended processes in dir held (a process killed holds what it allocated
// until someone credits it; its driver freed the memory when it died), and
// returns the bytes credited. A process has ended when its shim no longer
// holds the lock on its block and, outside a claim's directory, its pid
// no longer runs. The block's MemUsed is swapped to zero before it is
// credited, so that this, Scan and a tenant's own shim (which credits its
// tenant's ended processes before it refuses an allocation) never credit
// one process twice.
func CreditEnded(dir string) (uint64, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	_, err = os.Stat(filepath.Join(dir, ClaimRoot))
	byLock := err == nil // a claim's: pids of other namespaces
	var n uint64
	for _, de := range names {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		h, err := Open(dir, pid)
		if err != nil {
			continue
		}
		if !h.Held() && (byLock || !h.Snapshot().Alive()) {
			n += credit(dir, h)
		}
		h.Close()
	}
	return n, nil
}

// credit gives what the ended process of block h held back to its account.
// Another user's block, or one counted in another user's account, is left
// for root's carve daemon, which credits every block.
func credit(dir string, h *Handle) uint64 {
	if h.ro || atomic.LoadUint64(&h.b.MemUsed) == 0 {
		return 0
	}
	acct := h
	if atomic.LoadUint64(&h.b.MemTotal) == 0 { // not its own account
		a, err := account(dir, h.b)
		if err == nil && a.ro {
			a.Close()
			return 0
		}
		if err == nil {
			defer a.Close()
			acct = a
		}
	}
	n := atomic.SwapUint64(&h.b.MemUsed, 0)
	if n == 0 || acct == h && atomic.LoadUint64(&h.b.MemTotal) == 0 {
		return n // the account is gone, and its count with it
	}
	for {
		t := atomic.LoadUint64(&acct.b.MemTotal)
		if atomic.CompareAndSwapUint64(&acct.b.MemTotal, t, t-min(t, n)) {
			return n
		}
	}
}

// account opens the block that b's process counted its memory in, where
// that was not its own, as the shim chose it (shim/ctl.c's carve_account):
// a claim's root, else the block of its tenant's pid.
func account(dir string, b *Block) (*Handle, error) {
	h, err := openPath(filepath.Join(dir, ClaimRoot))
	if err == nil {
		return h, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tenant := int(atomic.LoadUint32(&b.Tenant))
	if h, err = Open(dir, tenant); err != nil {
		return nil, err
	}
	if int(h.b.PID) != tenant {
		h.Close()
		return nil, os.ErrNotExist
	}
	return h, nil
}
