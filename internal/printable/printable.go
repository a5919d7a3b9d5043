// Package printable escapes what a tenant controls (its command line, its
// claim's name, what its control block says) before carve prints it for
// people (carve ls, top, run's notes), so that it cannot drive the
// terminal it is printed on.
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String is s with each rune that is not printable (control characters
// such as ESC and newline, format characters) written as Go escapes it
// (\x1b, \n, \u200b), and each byte of invalid UTF-8 as \xNN; printable
// text, spaces and backslashes included, is left as it is. JSON output
// needs none of this: its encoder escapes what it writes.
func String(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}

// CommandLine is args, each made printable (String), joined with spaces and cut to
// width runes (the cut marked "..."); "?" for none.
func CommandLine(args []string, width int) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = String(a)
	}
	s := strings.Join(parts, " ")
	if utf8.RuneCountInString(s) > width {
		s = string([]rune(s)[:max(width-3, 0)]) + "..."
	}
	if s == "" {
		s = "?"
	}
	return s
}
