// GPU UUIDs in the 16 bytes a block holds them as: reading and writing
// them as nvidia-smi does.

package ctl

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// ParseUUID reads a GPU's UUID as nvidia-smi and carve's topologies write
// it (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, or MIG- for a MIG
// instance) into the 16 bytes the driver's cuDeviceGetUuid_v2 gives,
// which the shim compares with a launch's GPU.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	rest, ok := strings.CutPrefix(s, "GPU-")
	if !ok {
		rest, ok = strings.CutPrefix(s, "MIG-")
	}
	groups := strings.Split(rest, "-")
	if !ok || len(groups) != 5 || len(groups[0]) != 8 || len(groups[1]) != 4 || len(groups[2]) != 4 ||
		len(groups[3]) != 4 || len(groups[4]) != 12 {
		return u, fmt.Errorf("GPU UUID %q: want GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	if _, err := hex.Decode(u[:], []byte(strings.Join(groups, ""))); err != nil {
		return u, fmt.Errorf("GPU UUID %q: %w", s, err)
	}
	return u, nil
}

// FormatUUID writes a GPU's UUID as nvidia-smi does; "" for all zero (not
// known).
func FormatUUID(u [16]byte) string {
	if u == ([16]byte{}) {
		return ""
	}
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
