// MPS's device-memory limit, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: the setting
// that limits a client on one or more GPUs, read back, and the limit a
// running process was started with.

package mps

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// VarPinnedMemLimit is the variable that limits the device memory an MPS
// client may take, its context's included: the driver holds the client to
// the limit it started with for its life.
const VarPinnedMemLimit = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"

// PinnedMemLimit is the setting that limits a client to bytes on the GPU
// it sees as ordinal, ORDINAL=SIZE: MPS takes a size as a whole number
// followed by G or M (powers of 1024), so it is in GiB where it is whole
// ones, else in MiB, rounded up.
func PinnedMemLimit(ordinal int, bytes uint64) string {
	return PinnedMemLimits([]int{ordinal}, bytes)
}

// PinnedMemLimits is the setting that limits a client to bytes on each GPU
// it sees as one of ordinals, ORDINAL=SIZE,ORDINAL=SIZE...: a tenant of
// several GPUs may hold all of its limit on any one of them.
func PinnedMemLimits(ordinals []int, bytes uint64) string {
	size := strconv.FormatUint((bytes+1<<20-1)>>20, 10) + "M"
	if bytes%(1<<30) == 0 {
		size = strconv.FormatUint(bytes>>30, 10) + "G"
	}
	var each []string
	for _, o := range ordinals {
		each = append(each, fmt.Sprintf("%d=%s", o, size))
	}
	return VarPinnedMemLimit + "=" + strings.Join(each, ",")
}

// ParsePinnedMemLimit reads the value of VarPinnedMemLimit, a list of
// DEVICE=SIZE (the device by ordinal or UUID): the smallest limit it
// gives, in bytes; ok is false where it gives none.
func ParsePinnedMemLimit(v string) (limit uint64, ok bool, err error) {
	bad := fmt.Errorf("%s=%s: want DEVICE=SIZE, the size a whole number and G or M", VarPinnedMemLimit, v)
	for _, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		dev, size, found := strings.Cut(entry, "=")
		size = strings.ToUpper(strings.TrimSuffix(strings.TrimSpace(size), "B"))
		if !found || strings.TrimSpace(dev) == "" || len(size) < 2 {
			return 0, false, bad
		}
		shift, unit := uint(0), size[len(size)-1]
		switch unit {
		case 'G':
			shift = 30
		case 'M':
			shift = 20
		default:
			return 0, false, bad
		}
		n, err := strconv.ParseUint(size[:len(size)-1], 10, 64)
		if err != nil {
			return 0, false, bad
		}
		if b := n << shift; !ok || b < limit {
			limit, ok = b, true
		}
	}
	return limit, ok, nil
}

// StartedLimit is the device-memory limit process pid started with (its
// environment when it was executed), if it has one.
func StartedLimit(pid int) (uint64, bool, error) {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return 0, false, err
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, found := bytes.CutPrefix(kv, []byte(VarPinnedMemLimit+"=")); found {
			return ParsePinnedMemLimit(string(v))
		}
	}
	return 0, false, nil
}
