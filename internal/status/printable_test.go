// Tests of Printable and CommandLine (printable.go): what a tenant names
// (its command line, a claim name) is printed with control characters and
// invalid UTF-8 escaped.

package status

import (
	"strings"
	"testing"
	"time"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python serve.py --port 80", "python serve.py --port 80"},
		{`C:\dir ünïcödé 日本`, `C:\dir ünïcödé 日本`},
		{"\x1b]0;owned\x07\x1b[2J", `\x1b]0;owned\a\x1b[2J`},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"zero\u200bwidth \u202eevil", `zero\u200bwidth \u202eevil`},
		{"\u009b31m", `\u009b31m`}, // the C1 CSI
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := CommandLine([]string{"日本語日本語日本語", "x"}, 8); got != "日本語日本..." {
		t.Errorf("CommandLine cut by runes = %q", got)
	}
	if got := CommandLine([]string{"\xff\xff\xff\xff"}, 8); got != `\xff\...` {
		t.Errorf("CommandLine of invalid UTF-8 = %q", got)
	}
	if got := CommandLine(nil, 8); got != "?" {
		t.Errorf("CommandLine(nil) = %q", got)
	}
}

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
