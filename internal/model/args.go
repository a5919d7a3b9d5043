// Reading the model commands' arguments: KERNEL:VALUE pairs, and the
// GPC-packed placement of each named kernel on a profiled size.

package model

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePairs parses KERNEL:VALUE arguments (a positive VALUE; what names
// it in the error).
func ParsePairs(args []string, what string) ([]string, []float64, error) {
	names, vals := make([]string, len(args)), make([]float64, len(args))
	for i, a := range args {
		k, v, ok := strings.Cut(a, ":")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || x <= 0 {
			return nil, nil, fmt.Errorf("%q: want KERNEL:%s", a, what)
		}
		names[i], vals[i] = k, x
	}
	return names, vals, nil
}

// Placements puts each named kernel of ks on a GPC-packed partition of
// tpcs[i] TPCs (profiled sizes only).
func Placements(ks map[string]*Kernel, names []string, tpcs []float64, profiles string) ([]Placement, error) {
	ps := make([]Placement, len(names))
	for i, n := range names {
		k, ok := ks[n]
		if !ok {
			return nil, fmt.Errorf("no profile of %s in %s", n, profiles)
		}
		if tpcs[i] != float64(int(tpcs[i])) {
			return nil, fmt.Errorf("%s:%g: a whole number of TPCs, please", n, tpcs[i])
		}
		sms := 2 * int(tpcs[i]) // every TPC of the GPUs carve knows has two SMs
		if _, err := k.C(sms); err != nil {
			return nil, fmt.Errorf("%w: profile it with carve profile --tpcs including %d", err, int(tpcs[i]))
		}
		ps[i] = Placement{Kernel: k, SMs: sms}
	}
	return ps, nil
}
