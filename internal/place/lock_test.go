// Tests of the placement lock.

package place

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDeadHolderReleasesLock: a holder killed with SIGKILL keeps nothing.
func TestDeadHolderReleasesLock(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, "PLACE_HELPER=lock", "PLACE_DIR="+dir)
	if h.line != "locked" {
		t.Fatalf("helper: %q", h.line)
	}
	if _, err := Lock(dir, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), fmt.Sprint(h.cmd.Process.Pid)) {
		t.Fatalf("the lock of a live holder was taken, or the error does not name it: %v", err)
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
	start := time.Now()
	unlock, err := Lock(dir, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if d := time.Since(start); d > time.Second {
		t.Errorf("took the dead holder's lock after %v", d)
	}
}
