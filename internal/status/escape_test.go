// carve ls and carve top print what a tenant controls escaped (through
// internal/printable): no control character or invalid UTF-8 of its own.

package status

import (
	"strings"
	"testing"
	"time"
)

// TestListingsEscapeWhatTenantsControl: carve ls and carve top print a
// tenant's command line, claim name, GPU and fault call with no control
// character or invalid UTF-8 of its own.
func TestListingsEscapeWhatTenantsControl(t *testing.T) {
	now := time.Date(2026, 11, 23, 1, 19, 20, 0, time.UTC)
	evil := "\x1b[2J\x1b]0;pwned\x07\xff"
	rows := []Row{
		{PID: 10, Command: []string{"sh", "-c", evil}, TPCs: "0-3", NumTPCs: 4, GPU: "GPU-\x1b[31m", OtherLaunches: 1, OtherGPU: evil,
			Claim: "claim\x1b[1m", Fault: &Fault{Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Call: "cu\x1b[0m", At: now.Format(time.RFC3339Nano),
				Cause: "faulted", Xid: "Xid 31: \x1b[5m"}},
		{PID: 0, Claim: "only\nclaim"},
	}
	var ls, top strings.Builder
	WriteTable(&ls, rows, now, nil)
	WriteTop(&top, rows, nil, now, time.Second)
	for name, out := range map[string]string{"ls": ls.String(), "top": top.String()} {
		for i, r := range out {
			if r == '\n' {
				continue
			}
			if r < 0x20 || r == 0x7f || r == 0xfffd {
				t.Errorf("carve %s prints %q at %d:\n%s", name, r, i, out)
				break
			}
		}
		if !strings.Contains(out, `sh -c \x1b[2J\x1b]0;pwned\a\xff`) && !strings.Contains(out, `sh -c \x1b[2J\x1b]0;pwn...`) {
			t.Errorf("carve %s does not show the escaped command line:\n%s", name, out)
		}
	}
	for _, want := range []string{`claim claim\x1b[1m: sh -c`, `claim only\nclaim`, `UNMASKED on \x1b[2J`, `at cu\x1b[0m`, `(Xid 31: \x1b[5m)`, `GPU-\x1b[31m`} {
		if !strings.Contains(ls.String(), want) {
			t.Errorf("carve ls lacks %q:\n%s", want, ls.String())
		}
	}
}
