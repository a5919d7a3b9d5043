// The GPUs a command's --device values name, each with its own partition
// where the value gives one.

package partition

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GPU is one GPU a --device value names, by ordinal, with its own spec
// where the value gives one (Spec nil: the -t, -g or -n of the command).
type GPU struct {
	Ordinal int
	Spec    *Spec
}

// DevicesUsage says what --device takes, for the commands' help.
const DevicesUsage = `GPUs, by ordinal: N, or N,M,... for the partition -t/-g/-n names on each ` +
	`(a count: so many TPCs on each GPU), or N:SPEC for GPU N's own (N:16 or N:n=16 TPCs, N:n=25%, ` +
	`N:t=0-15, N:g=2,3); repeat it to name more; "all": every GPU (default 0)`

// ParseDevices reads the values of --device, in order: "N" or "N,M,..."
// (GPUs that take the command's partition), "N:SPEC" (GPU N with its own:
// "n=16", "16" or "25%" a count or share, "t=0-15,20" TPCs, "g=2,3"
// GPCs), or "all" alone (All: every GPU, each with the command's
// partition). None is GPU 0. A GPU named twice is an error.
func ParseDevices(values []string) (gpus []GPU, all bool, err error) {
	seen := map[int]bool{}
	add := func(ord string, spec *Spec) error {
		n, err := strconv.Atoi(strings.TrimSpace(ord))
		if err != nil || n < 0 {
			return fmt.Errorf("--device %q: a GPU is named by its ordinal, a whole number from 0", ord)
		}
		if seen[n] {
			return fmt.Errorf("--device: GPU %d is named twice", n)
		}
		seen[n] = true
		gpus = append(gpus, GPU{Ordinal: n, Spec: spec})
		return nil
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "all" {
			if len(values) > 1 {
				return nil, false, errors.New(`--device all names every GPU: give it alone`)
			}
			return nil, true, nil
		}
		ord, text, own := strings.Cut(v, ":")
		if !own {
			for _, o := range strings.Split(v, ",") {
				if err := add(o, nil); err != nil {
					return nil, false, err
				}
			}
			continue
		}
		spec, err := parseOwn(text)
		if err != nil {
			return nil, false, fmt.Errorf("--device %q: %w", v, err)
		}
		if err := add(ord, &spec); err != nil {
			return nil, false, err
		}
	}
	if len(gpus) == 0 {
		gpus = []GPU{{Ordinal: 0}}
	}
	return gpus, false, nil
}

// parseOwn reads the spec after "N:": kind=VALUE with the kind a flag's
// letter, or a count or share alone.
func parseOwn(text string) (Spec, error) {
	kind, value, named := strings.Cut(text, "=")
	if !named {
		s, err := ParseCount(text)
		if err != nil {
			return Spec{}, fmt.Errorf("%w (name TPCs as t=0-15, GPCs as g=2,3)", err)
		}
		return s, nil
	}
	switch strings.TrimSpace(kind) {
	case "n":
		return ParseCount(value)
	case "t":
		return ParseTPCs(value)
	case "g":
		return ParseGPCs(value)
	}
	return Spec{}, fmt.Errorf("%q: want n=COUNT, t=TPCS or g=GPCS", text)
}
