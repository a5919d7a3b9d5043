// ParseCounts: "all" or a list of TPC counts, as the commands that sweep
// partition sizes take them.

package partition

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseCounts parses "all" (1..max) or a comma-separated list of counts in
// 1..max, returned in increasing order without repeats.
func ParseCounts(s string, most int) ([]int, error) {
	if s == "all" {
		out := make([]int, most)
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("TPC count %q: want a whole number from 1 to %d", f, most)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
