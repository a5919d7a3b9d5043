// Tests of the placement lock, and of recording an older carve's claims
// under it, which every change under it does alike.

package place

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
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

// TestRecordLegacyFailure: where recording an older carve's claims fails,
// placement, move, memory change, release and fence each fail with that
// error, and let the lock go.
func TestRecordLegacyFailure(t *testing.T) {
	top, _ := topologyJSON(t)
	dir := t.TempDir()
	broken := errors.New("the disk is full")
	recordLegacy = func(string) (int, error) { return 0, broken }
	t.Cleanup(func() { recordLegacy = ctl.RecordLegacy })
	for name, change := range map[string]func() error{
		"place": func() error {
			_, err := Place(dir, top, Request{Claim: &Claim{UID: "a", Name: "ns/a"}, Spec: count(t, "4")})
			return err
		},
		"move": func() error {
			_, err := Move(dir, top, 1, count(t, "4"), false)
			return err
		},
		"set memory": func() error {
			_, err := SetMemory(dir, top, 1, ctl.MemLimit{Bytes: 1 << 30}, false, nil)
			return err
		},
		"release": func() error {
			_, err := Release(dir, "a")
			return err
		},
		"fence": func() error { return Fence(dir) },
	} {
		if err := change(); !errors.Is(err, broken) {
			t.Errorf("%s: %v, want the recording's error", name, err)
		}
		unlock, err := Lock(dir, 0)
		if err != nil {
			t.Fatalf("after %s: %v", name, err)
		}
		unlock()
	}
}
