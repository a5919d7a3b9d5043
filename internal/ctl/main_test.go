// The test binary doubles as a process that holds the lock on a block's
// first byte, as a tenant's shim does (ctltest.HoldLock starts it).

package ctl_test

import (
	"os"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl/ctltest"
)

func TestMain(m *testing.M) {
	ctltest.ServeHold()
	os.Exit(m.Run())
}
