// Tests of MemLimit: reading, writing back and resolving memory limits.

package ctl_test

import (
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

// TestParseMemLimit: sizes in powers of 1024 however spelled, bytes and
// shares are read; malformed, zero, negative sizes and shares over 100%
// are errors that say why; String reads back as the same limit.
func TestParseMemLimit(t *testing.T) {
	const gi = 1 << 30
	for _, tc := range []struct {
		in   string
		want ctl.MemLimit
		err  string
	}{
		{"512M", ctl.MemLimit{Bytes: 512 << 20}, ""},
		{"12G", ctl.MemLimit{Bytes: 12 * gi}, ""},
		{"12GiB", ctl.MemLimit{Bytes: 12 * gi}, ""},
		{"12gi", ctl.MemLimit{Bytes: 12 * gi}, ""},
		{"12GB", ctl.MemLimit{Bytes: 12 * gi}, ""},
		{"1.5T", ctl.MemLimit{Bytes: 3 << 39}, ""},
		{"4096", ctl.MemLimit{Bytes: 4096}, ""},
		{"4096B", ctl.MemLimit{Bytes: 4096}, ""},
		{" 2K ", ctl.MemLimit{Bytes: 2048}, ""},
		{"60%", ctl.MemLimit{Percent: 60}, ""},
		{"12.5%", ctl.MemLimit{Percent: 12.5}, ""},
		{"100%", ctl.MemLimit{Percent: 100}, ""},
		{"", ctl.MemLimit{}, "want a size"},
		{"twelve", ctl.MemLimit{}, "want a size"},
		{"12X", ctl.MemLimit{}, `unknown unit "X"`},
		{"12i", ctl.MemLimit{}, `unknown unit "i"`},
		{"1e3G", ctl.MemLimit{}, "want a size"},
		{"0", ctl.MemLimit{}, "a limit of nothing"},
		{"0G", ctl.MemLimit{}, "a limit of nothing"},
		{"0%", ctl.MemLimit{}, "a limit of nothing"},
		{"-1G", ctl.MemLimit{}, "negative"},
		{"-5%", ctl.MemLimit{}, "want a size"},
		{"101%", ctl.MemLimit{}, "at most 100%"},
		{"1.5", ctl.MemLimit{}, "whole"},
		{"99999999T", ctl.MemLimit{}, "too large"},
		{"G", ctl.MemLimit{}, "want a size"},
	} {
		got, err := ctl.ParseMemLimit(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %+v %v, want an error saying %q", tc.in, got, err, tc.err)
		case err == nil:
			if back, err := ctl.ParseMemLimit(got.String()); err != nil || back != got {
				t.Errorf("%q: String %q reads back as %+v %v", tc.in, got.String(), back, err)
			}
		}
	}
}

// TestResolveMemLimit: a share of the GPU's memory in whole MiB; a limit
// over the GPU's memory, or a share of a GPU whose memory is not known,
// is an error.
func TestResolveMemLimit(t *testing.T) {
	const h100 = 81079 << 20
	for _, tc := range []struct {
		m     ctl.MemLimit
		total uint64
		want  uint64
		err   string
	}{
		{ctl.MemLimit{}, h100, 0, ""},
		{ctl.MemLimit{Bytes: 12 << 30}, h100, 12 << 30, ""},
		{ctl.MemLimit{Percent: 50}, h100, 40539 << 20, ""},
		{ctl.MemLimit{Percent: 100}, h100, h100, ""},
		{ctl.MemLimit{Bytes: 80 << 30}, h100, 0, "more than the GPU's 79.2G"},
		{ctl.MemLimit{Percent: 50}, 0, 0, "not known"},
		{ctl.MemLimit{Bytes: 80 << 30}, 0, 80 << 30, ""},
	} {
		got, err := tc.m.Resolve(tc.total)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%+v of %d: %d %v, want %d", tc.m, tc.total, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v of %d: %d %v, want an error saying %q", tc.m, tc.total, got, err, tc.err)
		}
	}
	for b, want := range map[uint64]string{0: "0", 1000: "1000", 512 << 20: "512M", 11*(1<<30) + 300<<20: "11.3G", 81079 << 20: "79.2G"} {
		if got := ctl.FormatBytes(b); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", b, got, want)
		}
	}
}
