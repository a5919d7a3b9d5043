// Tests of String and CommandLine (printable.go): what a tenant names
// (its command line, a claim name) is printed with control characters and
// invalid UTF-8 escaped.

package printable

import (
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python serve.py --port 80", "python serve.py --port 80"},
		{`C:\dir ünïcödé 日本`, `C:\dir ünïcödé 日本`},
		{"\x1b]0;owned\x07\x1b[2J", `\x1b]0;owned\a\x1b[2J`},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"zero\u200bwidth \u202eevil", `zero\u200bwidth \u202eevil`},
		{"\u009b31m", `\u009b31m`}, // the C1 CSI
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
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
