// Tests of the metric of the blocks the daemon could not read.

package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestMetricUnreadable: blocks carve cannot read are counted by why,
// and the others are served beside them.
func TestMetricUnreadable(t *testing.T) {
	dir := t.TempDir()
	pid := sleeper(t)
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Comm: []string{"train"}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	os.WriteFile(filepath.Join(dir, "1"), make([]byte, ctl.Size), 0o600)
	os.WriteFile(filepath.Join(dir, "2"), make([]byte, ctl.Size), 0o600)
	os.WriteFile(filepath.Join(dir, "3"), make([]byte, 10), 0o600)
	addr, _ := start(t, Options{Dir: dir})
	m := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{
		`carve_blocks_unreadable{reason="magic"} 2`,
		`carve_blocks_unreadable{reason="size"} 1`,
		`carve_tenant_launches_total{claim="",class="",command="",pid="` + itoa(pid) + `"} 0`, // command lines only with ShowCommands
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}
