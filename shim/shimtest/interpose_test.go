// The driver calls the shim sees (shim/interpose.c): launches through
// every entry point keep the mask, and the program is told its
// partition's SM count.

package shimtest_test

import (
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestInterposedLaunchesKeepTheMask: the mask is applied to launches made
// through every entry point a framework reaches by cuGetProcAddress (both
// flavours of the default stream) and through the exported names.
func TestInterposedLaunchesKeepTheMask(t *testing.T) {
	mask := enableOnly(0, 9)
	p, _ := startExec(t, t.TempDir(), ctl.Init{Parts: []ctl.Part{{Mask: mask, Live: live, SMs: 4}}})
	p.ready(t)
	for _, cmd := range []string{"klaunch kernel", "klaunch kernel ptds", "klaunch ex", "klaunch ex ptds",
		"klaunch coop", "klaunch graph", "direct"} {
		if got := p.ask(t, cmd); got != maskLine(mask) {
			t.Errorf("%s: %q, want %q", cmd, got, maskLine(mask))
		}
	}
	if got := p.ask(t, "next"); got != "next same" {
		t.Errorf("dlsym(RTLD_NEXT) from the program under the shim: %q", got)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d; stderr %s", code, p.stderr)
	}
}

// TestReportedSMs: the program is told its partition's SM count, unless
// carve run was given --all-sms; a resize changes what later queries see.
func TestReportedSMs(t *testing.T) {
	dir := t.TempDir()
	p, h := startExec(t, dir, ctl.Init{Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live, SMs: 4}}})
	p.ready(t)
	if got := p.ask(t, "sms"); got != "sms 4 rc 0" {
		t.Errorf("partition of 2 TPCs: %q, want 4 SMs", got)
	}
	if _, err := h.SetMask(enableOnly(0, 1, 2, 3, 9), 10); err != nil {
		t.Fatal(err)
	}
	if got := p.ask(t, "sms"); got != "sms 10 rc 0" {
		t.Errorf("after a resize to 5 TPCs: %q, want 10 SMs", got)
	}
	p.wait(t)

	p, _ = startExec(t, dir, ctl.Init{Flags: ctl.FlagAllSMs, Parts: []ctl.Part{{Mask: enableOnly(0, 1), Live: live, SMs: 4}}})
	p.ready(t)
	if got := p.ask(t, "sms"); got != "sms 132 rc 0" {
		t.Errorf("--all-sms: %q, want the whole GPU's 132", got)
	}
	p.wait(t)
}
