package internal_test

// The rules ARCHITECTURE.md states about carve's packages, checked on the
// import graph that 'go list' reports.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/carve-gpu/carve/"

type pkg struct {
	ImportPath string
	Deps       []string
}

func listDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		deps[strings.TrimPrefix(p.ImportPath, module)] = p.Deps
	}
	return deps
}

// TestPurePackagesLoadNoDriver: the packages that hold data and arithmetic
// reach neither the driver (internal/cuda, purego) nor GPU programs, so a
// daemon, a Kubernetes driver or a test can use them on any machine.
func TestPurePackagesLoadNoDriver(t *testing.T) {
	deps := listDeps(t)
	pure := []string{"internal/topo", "internal/partition", "internal/model", "internal/stats", "internal/report",
		"internal/evaluate", "internal/jsonfile", "internal/ctl", "internal/preload", "internal/place", "internal/status", "internal/xid", "internal/daemon"}
	banned := []string{module + "internal/cuda", module + "internal/hook", module + "internal/kernels",
		module + "internal/workload", module + "internal/bench", "github.com/ebitengine/purego"}
	for _, p := range pure {
		d, ok := deps[p]
		if !ok {
			t.Errorf("package %s not found", p)
			continue
		}
		for _, dep := range d {
			for _, b := range banned {
				if dep == b {
					t.Errorf("%s depends on %s", p, b)
				}
			}
		}
	}
}

// TestArrowsRunOneWay: experiments use workloads and reports, never the
// other way; nothing below the command line imports it.
func TestArrowsRunOneWay(t *testing.T) {
	deps := listDeps(t)
	never := map[string][]string{
		"internal/workload": {"internal/bench", "internal/profile"},
		"internal/report":   {"internal/bench", "internal/workload"},
		"internal/model":    {"internal/profile", "internal/evaluate"},
	}
	for p, bad := range never {
		for _, dep := range deps[p] {
			for _, b := range bad {
				if dep == module+b {
					t.Errorf("%s imports %s", p, b)
				}
			}
		}
	}
	for p, d := range deps {
		for _, dep := range d {
			if dep == module+"cmd/carve" {
				t.Errorf("%s imports the command line", p)
			}
		}
	}
}

// TestCommandFilesAreShort: a command file parses flags, makes one call
// and prints; the work is in internal/.
func TestCommandFilesAreShort(t *testing.T) {
	files, err := filepath.Glob("../cmd/carve/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no command files: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for sc := bufio.NewScanner(fh); sc.Scan(); {
			n++
		}
		fh.Close()
		if n > 200 {
			t.Errorf("%s has %d lines: move what it does into internal/", f, n)
		}
	}
}
