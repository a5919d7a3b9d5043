// The rules ARCHITECTURE.md states about carve's packages, checked on the
// import graph that 'go list' reports, and on the source of the files
// that handle TPC masks.

package internal_test

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
		"internal/evaluate", "internal/jsonfile", "internal/ctl", "internal/preload", "internal/place", "internal/status", "internal/xid", "internal/slo", "internal/daemon"}
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

// maskFile is the one file that turns enable sets into disable masks and
// back (topo.Enable, topo.Disable) and names their raw words.
const maskFile = "internal/topo/mask.go"

// rawWordsElsewhere are the files with a [4]uint32 that is not a mask.
var rawWordsElsewhere = map[string]string{
	"internal/workload/predictsuite.go": "a palette of four colours",
}

// TestMasksAreTyped: TPC masks are topo.Enable or topo.Disable everywhere
// but the ABI. Outside maskFile no file names raw mask words ([4]uint32,
// but as a field of a mirror of the shim's structs, tagged c:"..."),
// converts one kind into the other (topo.Enable(x), topo.Disable(x)) or
// flips words itself (^w[i], w[i] &^ v[i], .Not()). Test files may build
// raw words where they check the ABI.
func TestMasksAreTyped(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if rel == maskFile {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		for _, bad := range maskMisuses(f) {
			if bad.what == "[4]uint32" && rawWordsElsewhere[rel] != "" {
				continue
			}
			t.Errorf("%s:%d: %s outside %s", rel, fset.Position(bad.pos).Line, bad.what, maskFile)
		}
		return nil
	})
	if err != nil || checked < 100 {
		t.Fatalf("checked %d files: %v", checked, err)
	}
}

type misuse struct {
	pos  token.Pos
	what string
}

// maskMisuses lists what TestMasksAreTyped refuses in f.
func maskMisuses(f *ast.File) []misuse {
	var out []misuse
	abi := map[ast.Expr]bool{} // the types of fields mirroring a C struct's
	ast.Inspect(f, func(n ast.Node) bool {
		if fl, ok := n.(*ast.Field); ok && fl.Tag != nil {
			if tag, err := strconv.Unquote(fl.Tag.Value); err == nil && strings.Contains(tag, `c:"`) {
				abi[fl.Type] = true
			}
		}
		return true
	})
	isIndex := func(e ast.Expr) bool { _, ok := ast.Unparen(e).(*ast.IndexExpr); return ok }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ArrayType:
			if lit, ok := n.Len.(*ast.BasicLit); ok && lit.Value == "4" && isIdent(n.Elt, "uint32") && !abi[n] {
				out = append(out, misuse{n.Pos(), "[4]uint32"})
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if ok && sel.Sel.Name == "Not" && len(n.Args) == 0 {
				out = append(out, misuse{n.Pos(), ".Not()"})
			}
			if ok && isIdent(sel.X, "topo") && (sel.Sel.Name == "Enable" || sel.Sel.Name == "Disable") ||
				f.Name.Name == "topo" && (isIdent(n.Fun, "Enable") || isIdent(n.Fun, "Disable")) {
				out = append(out, misuse{n.Pos(), "a conversion between enable and disable masks"})
			}
		case *ast.UnaryExpr:
			if n.Op == token.XOR && isIndex(n.X) {
				out = append(out, misuse{n.Pos(), "a flipped mask word (^w[i])"})
			}
		case *ast.BinaryExpr:
			if n.Op == token.AND_NOT && (isIndex(n.X) || isIndex(n.Y)) {
				out = append(out, misuse{n.Pos(), "a flipped mask word (&^)"})
			}
		case *ast.AssignStmt:
			if n.Tok == token.AND_NOT_ASSIGN && isIndex(n.Lhs[0]) {
				out = append(out, misuse{n.Pos(), "a flipped mask word (&^=)"})
			}
		}
		return true
	})
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestMaskCheckFindsMisuses: the check above refuses each misuse it names,
// and lets a mirror's tagged field and typed code pass.
func TestMaskCheckFindsMisuses(t *testing.T) {
	src := `package x
type Block struct {
	Mask [4]uint32 ` + "`c:\"mask\"`" + `
}
type Init struct{ Mask [4]uint32 }
func a(d topo.Disable) topo.Enable { return d.Enable() }
func b(e topo.Enable) topo.Disable { return topo.Disable(e) }
func c(m topo.Mask) topo.Mask { return m.Not() }
func d(w, v [4]uint32) uint32 { return ^w[0] | w[1]&^v[1] }
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range maskMisuses(f) {
		got = append(got, m.what)
	}
	want := []string{"[4]uint32", "a conversion between enable and disable masks", ".Not()", "[4]uint32",
		"a flipped mask word (^w[i])", "a flipped mask word (&^)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("misuses found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
