// FuzzParseMemLimit: a memory limit as users write it (--mem, a claim's
// config) never panics; what parses is a size above 0 or a share in
// (0, 100], and reads back the same from its String.

package ctl

import (
	"math"
	"testing"
)

func FuzzParseMemLimit(f *testing.F) {
	for _, s := range []string{"512M", "12G", "12GiB", "1.5T", "4096", "60%", " 60 % ", "100%", "100.5%", "0", "0%", "-1G", "1.5",
		"0.5K", "1e3G", "16E", "99999999999T", "NaN%", "Inf", "12g", "12gb", "12 G", ".5G", "5.G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMemLimit(s)
		if err != nil {
			return
		}
		switch {
		case m.Bytes > 0 && m.Percent == 0:
		case m.Bytes == 0 && m.Percent > 0 && m.Percent <= 100 && !math.IsNaN(m.Percent):
		default:
			t.Fatalf("%q: %d bytes, %g%%", s, m.Bytes, m.Percent)
		}
		back, err := ParseMemLimit(m.String())
		if err != nil || back != m {
			t.Fatalf("%q: %+v reads back from %q as %+v, %v", s, m, m.String(), back, err)
		}
	})
}
