// Package preload finds libcarve.so and makes the environment that loads it
// into an unmodified program: LD_PRELOAD, the directory of control blocks,
// and the block a program (and its children) copies its partition from.
// Everything that starts a partitioned program goes through Env, so that
// the variables the shim reads are named in one place (the shim reads them
// in shim/main.c and shim/ctl.c).
package preload

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Variables the shim reads.
const (
	VarCtlDir             = "CARVE_CTL_DIR"
	VarCtlRoot            = "CARVE_CTL_ROOT"
	VarAllowUnpartitioned = "CARVE_ALLOW_UNPARTITIONED"
	VarShim               = "CARVE_SHIM"
)

// ExitRefused is the exit status of a program that carve refuses to run
// unpartitioned: the shim's CARVE_EXIT_REFUSED (shim/shim.h), and carve
// run's when the shim it would preload is not carve's library.
const ExitRefused = 86

// ABISymbol is the variable libcarve.so exports, holding the control
// block's version (ctl.Version), by which Verify knows the library.
const ABISymbol = "carve_abi_version"

// ErrNotShim is wrapped by the error of Find and Verify for a file that is
// not carve's library, or not of this carve's control-block version.
var ErrNotShim = errors.New("not carve's library")

// Find locates libcarve.so: flag, else $CARVE_SHIM, else beside the carve
// binary (bin/) or in ../lib/carve/ from it; and checks with Verify that
// what it found is carve's library.
func Find(flag string) (string, error) {
	for _, p := range []string{flag, os.Getenv(VarShim)} {
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("shim %s: %w", p, err)
			}
			return verified(p)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(dir, "libcarve.so"), filepath.Join(dir, "..", "lib", "carve", "libcarve.so")} {
		if _, err := os.Stat(p); err == nil {
			return verified(p)
		}
	}
	return "", fmt.Errorf("libcarve.so not found beside %s: build it with 'make', or pass --shim", exe)
}

func verified(p string) (string, error) {
	if err := Verify(p); err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// Verify checks that path is carve's library, of this carve's control-block
// version: an ELF shared object whose dynamic symbols define ABISymbol,
// holding ctl.Version. A file that is not (an empty file, text, another
// library) would be preloaded to no effect, and the program run on the
// whole GPU; the error, wrapping ErrNotShim, names the file and says why.
func Verify(path string) error {
	why := abiMismatch(path)
	if why == "" {
		return nil
	}
	return fmt.Errorf("shim %s: %w: %s", path, ErrNotShim, why)
}

// abiMismatch says why path is not carve's library ("" where it is).
func abiMismatch(path string) string {
	if fi, err := os.Stat(path); err != nil {
		return err.Error()
	} else if !fi.Mode().IsRegular() {
		return "not a regular file (" + fi.Mode().Type().String() + ")"
	} else if fi.Size() == 0 {
		return "not an ELF file (it is empty)"
	}
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "not an ELF file (" + err.Error() + ")"
		}
		return err.Error()
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		return fmt.Sprintf("an ELF %s, not a shared library", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "an executable, not a shared library"
		}
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return "a shared library without dynamic symbols (" + err.Error() + ")"
	}
	for _, sym := range syms {
		if sym.Name != ABISymbol || sym.Section == elf.SHN_UNDEF || int(sym.Section) >= len(f.Sections) {
			continue
		}
		if sym.Size != 4 {
			return fmt.Sprintf("its %s is %d bytes, not 4", ABISymbol, sym.Size)
		}
		sec := f.Sections[sym.Section]
		if sym.Value < sec.Addr || sym.Value+4 > sec.Addr+sec.Size || sec.Type == elf.SHT_NOBITS {
			return fmt.Sprintf("its %s lies outside its section %s", ABISymbol, sec.Name)
		}
		var b [4]byte
		if _, err := sec.ReadAt(b[:], int64(sym.Value-sec.Addr)); err != nil {
			return fmt.Sprintf("reading its %s: %v", ABISymbol, err)
		}
		if v := f.ByteOrder.Uint32(b[:]); v != ctl.Version {
			return fmt.Sprintf("its control-block version (%s) is %d, this carve's is %d: install the libcarve.so built with this carve",
				ABISymbol, v, ctl.Version)
		}
		return ""
	}
	return "a shared library that does not define " + ABISymbol + " (a libcarve.so older than this carve, or another library)"
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
