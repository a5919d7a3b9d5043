// Package preload finds libcarve.so and makes the environment that loads it
// into an unmodified program: LD_PRELOAD, the directory of control blocks,
// and the block a program (and its children) copies its partition from.
// Everything that starts a partitioned program goes through Env, so that
// the variables the shim reads are named in one place (the shim reads them
// in shim/main.c and shim/ctl.c).
package preload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Variables the shim reads.
const (
	VarCtlDir             = "CARVE_CTL_DIR"
	VarCtlRoot            = "CARVE_CTL_ROOT"
	VarAllowUnpartitioned = "CARVE_ALLOW_UNPARTITIONED"
	VarShim               = "CARVE_SHIM"
)

// Find locates libcarve.so: flag, else $CARVE_SHIM, else beside the carve
// binary (bin/) or in ../lib/carve/ from it.
func Find(flag string) (string, error) {
	for _, p := range []string{flag, os.Getenv(VarShim)} {
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("shim %s: %w", p, err)
			}
			return filepath.Abs(p)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(dir, "libcarve.so"), filepath.Join(dir, "..", "lib", "carve", "libcarve.so")} {
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("libcarve.so not found beside %s: build it with 'make', or pass --shim", exe)
}

// Env returns env with the shim preloaded (before any library already in
// LD_PRELOAD) and pointed at the control blocks in dir, the program's own
// being block (a path in dir).
func Env(env []string, lib, dir, block string) []string {
	preload := lib
	for _, kv := range env {
		if old, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok && old != "" {
			preload += ":" + old
		}
	}
	return Set(env, "LD_PRELOAD="+preload, VarCtlDir+"="+dir, VarCtlRoot+"="+block)
}

// Set sets each KEY=VALUE in env, replacing earlier values of KEY.
func Set(env []string, kvs ...string) []string {
	for _, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		out := env[:0:0]
		for _, e := range env {
			if ek, _, _ := strings.Cut(e, "="); ek != k {
				out = append(out, e)
			}
		}
		env = append(out, kv)
	}
	return env
}

// Without drops the variables named from env.
func Without(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range keys {
			drop = drop || k == d
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
