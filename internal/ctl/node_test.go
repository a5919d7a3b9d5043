// The node block's lease (node.go): every tenant of the GPU may write the
// block, so carve writes its own lease there again whenever it opens the
// block or frees the slots of tenants that ended.

package ctl_test

import (
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestNodeLeaseReset: a lease a tenant wrote into the node block is
// NodeLease again after Reclaim, and after the block is opened again.
func TestNodeLeaseReset(t *testing.T) {
	dir := t.TempDir()
	n, err := ctl.OpenNode(dir, "node-test", live)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	f, err := os.OpenFile(n.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, ctl.NodeSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	lease := &(*ctl.NodeBlock)(unsafe.Pointer(&mem[0])).LeaseNS
	if got := time.Duration(atomic.LoadUint64(lease)); got != ctl.NodeLease {
		t.Fatalf("a new node block's lease is %v, want %v", got, ctl.NodeLease)
	}
	atomic.StoreUint64(lease, uint64(time.Hour)) // as a tenant may
	n.Reclaim()
	if got := time.Duration(atomic.LoadUint64(lease)); got != ctl.NodeLease {
		t.Errorf("after Reclaim, the lease is %v, want %v", got, ctl.NodeLease)
	}
	atomic.StoreUint64(lease, uint64(time.Hour))
	again, err := ctl.OpenNode(dir, "node-test", live)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := time.Duration(atomic.LoadUint64(lease)); got != ctl.NodeLease {
		t.Errorf("after OpenNode, the lease is %v, want %v", got, ctl.NodeLease)
	}
}
