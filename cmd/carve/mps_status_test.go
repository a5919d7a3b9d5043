// Tests of carve mps status.

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/mps/mpstest"
)

// TestMPSStatusRefusing: carve mps status says where MPS runs but does not
// answer (its clients cannot connect) and what to do, and -o json has the
// error, where it showed a daemon without servers.
func TestMPSStatusRefusing(t *testing.T) {
	sandbox(t)
	t.Setenv("PATH", filepath.Dir(mpstest.Control(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	d := mps.Default()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	refuse := filepath.Join(d.PipeDir(), mpstest.RefuseFile)
	t.Cleanup(func() { os.Remove(refuse); d.Stop() })
	if out, _, err := carve(t, "mps", "status"); err != nil || !strings.Contains(out, "servers [4242]") {
		t.Errorf("an answering MPS: %v %q", err, out)
	}
	if err := os.WriteFile(refuse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := carve(t, "mps", "status")
	for _, want := range []string{"pid " + strconv.Itoa(d.PID()), "does not answer", "refused the connection", "carve mps stop"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("a refusing MPS: %v, %q lacks %q", err, out, want)
		}
	}
	out, _, err = carve(t, "mps", "status", "-o", "json")
	var st struct {
		Running bool
		Error   string
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || !st.Running || !strings.Contains(st.Error, "refused the connection") {
		t.Errorf("a refusing MPS, -o json: %v %q", err, out)
	}
}
