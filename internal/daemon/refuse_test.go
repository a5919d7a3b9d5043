// Tests of daemon.go's adoption of an MPS that refuses its clients: it is
// adopted with a warning saying how to replace it.

package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/mps/mpstest"
)

// TestAdoptRefusingMPS: a restarted daemon that finds MPS running but
// refusing its clients adopts it, leaving it to the clients it may have,
// and warns, saying how to replace it; one that answers is adopted
// without a warning.
func TestAdoptRefusingMPS(t *testing.T) {
	d := &mps.Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	refuse := filepath.Join(d.PipeDir(), mpstest.RefuseFile)
	t.Cleanup(func() { os.Remove(refuse); d.Stop() })
	pid := d.PID()
	for _, refusing := range []bool{false, true} {
		if refusing {
			if err := os.WriteFile(refuse, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var log strings.Builder
		if err := runMPS(d, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
			t.Fatalf("refusing %v: %v", refusing, err)
		}
		warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "does not answer") &&
			strings.Contains(log.String(), "carve mps stop") && strings.Contains(log.String(), "refused the connection")
		if !strings.Contains(log.String(), "MPS adopted") || d.PID() != pid || warned != refusing {
			t.Errorf("refusing %v: MPS pid %d (was %d), log:\n%s", refusing, d.PID(), pid, log.String())
		}
	}
}
