// Package shimtest builds libcarve.so, the fake libcuda.so.1 and the test
// programs of shim/ for tests, once per test binary, with the flags the
// Makefile uses; and the shim's test build, whose clocks a test drives
// (Clock). It needs a C compiler ($CC, default cc) and no GPU.
package shimtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Built are the paths of what Build compiled.
type Built struct {
	Dir    string
	Shim   string // libcarve.so
	Fake   string // the fake libcuda.so.1 (shim/fake)
	Driver string // a program that drives the fake driver (shim/test/driver)
	Layout string // prints struct carve_ctl's layout (shim/test/layout.c)

	// TestShim is libcarve.so built with TestCFlags: where CARVE_TEST_CLOCK
	// names a Clock, its clocks, naps and yields run on it
	// (shim/test/vclock.h); elsewhere it behaves as Shim.
	TestShim string
}

// CFlags are the Makefile's flags for the shim.
var CFlags = []string{"-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-fvisibility=hidden"}

// TestCFlags are the flags of the shim's test build: CFlags and CARVE_TEST.
var TestCFlags = append(append([]string{}, CFlags...), "-DCARVE_TEST")

var (
	once  sync.Once
	built Built
	err   error
)

// ShimDir is the shim's source directory.
func ShimDir() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "shim")
}

// Build compiles everything once and fails the test if it cannot.
func Build(t testing.TB) Built {
	t.Helper()
	once.Do(func() { built, err = build() })
	if err != nil {
		t.Fatalf("building the shim and its fakes (needs a C compiler): %v", err)
	}
	return built
}

func build() (Built, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	d, err := os.MkdirTemp("", "carve-shim-test-")
	if err != nil {
		return Built{}, err
	}
	src := ShimDir()
	sources, err := cSources(src)
	if err != nil {
		return Built{}, err
	}
	fake, err := cSources(filepath.Join(src, "fake"))
	if err != nil {
		return Built{}, err
	}
	driver, err := cSources(filepath.Join(src, "test", "driver"))
	if err != nil {
		return Built{}, err
	}
	b := Built{Dir: d, Shim: filepath.Join(d, "libcarve.so"), Fake: filepath.Join(d, "libcuda.so.1"),
		Driver: filepath.Join(d, "driver"), Layout: filepath.Join(d, "layout")}
	b.TestShim = filepath.Join(d, "test", "libcarve.so") // the same name, for LD_PRELOAD
	if err := os.Mkdir(filepath.Dir(b.TestShim), 0o700); err != nil {
		return Built{}, err
	}
	steps := [][]string{
		append(append(append([]string{cc}, CFlags...), "-shared", "-o", b.Shim), append(sources, "-ldl", "-pthread")...),
		append(append(append([]string{cc}, TestCFlags...), "-shared", "-o", b.TestShim), append(sources, "-ldl", "-pthread")...),
		append(append([]string{cc, "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-o", b.Fake}, fake...), "-ldl", "-pthread"),
		append(append([]string{cc, "-O2", "-Wall", "-o", b.Driver}, driver...), "-ldl", "-pthread"),
		{cc, "-Wall", "-o", b.Layout, filepath.Join(src, "test", "layout.c")},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return Built{}, fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	return b, nil
}

// cSources are the C files of dir, every one: a program or library of
// shim/ is the files of its directory.
func cSources(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.c"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no C sources in %s", dir)
	}
	return files, nil
}
