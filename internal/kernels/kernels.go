// Package kernels holds carve's GPU kernels: CUDA C sources, the PTX that
// gen.sh makes from them (committed, so that carve builds without nvcc), and
// the embedded PTX by name.
package kernels

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/carve-gpu/carve/internal/cuda"
)

//go:embed *.ptx
var ptx embed.FS

// PTX returns the embedded PTX of the source file name.cu, or name.ptx from
// $CARVE_PTX_DIR where that is set: on a machine with nvcc, kernels can be
// changed, regenerated with gen.sh and run without rebuilding carve.
func PTX(name string) (string, error) {
	if dir := os.Getenv("CARVE_PTX_DIR"); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name+".ptx"))
		return string(b), err
	}
	b, err := ptx.ReadFile(name + ".ptx")
	if err != nil {
		return "", fmt.Errorf("no embedded kernel module %q: %w", name, err)
	}
	return string(b), nil
}

// Load JIT-compiles the module name (PTX) into the current context.
func Load(name string) (cuda.Module, error) {
	src, err := PTX(name)
	if err != nil {
		return 0, err
	}
	m, err := cuda.LoadPTX(src)
	if err != nil {
		return 0, fmt.Errorf("loading the %s kernels: %w", name, err)
	}
	return m, nil
}

var sourceLine = regexp.MustCompile(`^// carve-source: (\S+) sha256:([0-9a-f]{64})\n`)

// SourceHash returns the source file and sha256 recorded in a module's PTX.
func SourceHash(name string) (file, sum string, err error) {
	s, err := PTX(name)
	if err != nil {
		return "", "", err
	}
	m := sourceLine.FindStringSubmatch(s)
	if m == nil {
		return "", "", fmt.Errorf("%s.ptx has no carve-source line: regenerate it with gen.sh", name)
	}
	return m[1], m[2], nil
}
