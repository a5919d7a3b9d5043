// What README.md and ARCHITECTURE.md say about the code, checked against
// the code: the numbers they state against the Go constants (which
// TestConstantsMatchHeaders in internal/ctl checks against the C headers),
// ARCHITECTURE's tables of packages and of the shim's files against
// 'go list' and shim/, and every path they name against the tree.
//
// The docs are prose for people ("for a second", "an hour", "100 ms"), so
// they are checked rather than generated: a generator would need markers in
// the Markdown and a step to remember, where this fails in go test with the
// sentence and the value it should say.

package internal_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/place"
)

var docs = []string{"README.md", "ARCHITECTURE.md"}

// readDoc returns a file at the module's root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text of doc's "## title" section, up to the next one.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	text := readDoc(t, doc)
	_, rest, ok := strings.Cut(text, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", doc, title)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// tableNames returns, for each row of the Markdown tables in text (not
// their headers), the names in backquotes in its first cell.
func tableNames(text string) [][]string {
	var rows [][]string
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 3 || cells[0] != "" || strings.Trim(cells[1], " -") == "" {
			continue // not a row, or the line under a header
		}
		if i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "| ---") {
			continue // a header
		}
		var names []string
		for _, m := range backquoted.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
		rows = append(rows, names)
	}
	return rows
}

var (
	backquoted = regexp.MustCompile("`([^`]+)`")
	fence      = regexp.MustCompile("(?s)\n```.*?\n```") // a block of code: shell lines, not names
)

// A claim is a phrase of the docs that states a constant: every match of
// re, its group being the number, must say want. A claim that matches
// nowhere fails too, so that rewording a sentence means rewording its claim.
type claim struct {
	what string
	re   string
	want int64 // for durations, in ns
	dur  bool  // the number is a duration ("a second", "100 ms")
}

func claims(t *testing.T) []claim {
	return []claim{
		{"ctl.Size", `(\d+)-byte file per process`, ctl.Size, false},
		{"ctl.NodeSize", `(\d+)-byte file per GPU`, ctl.NodeSize, false},
		{"the offset of ctl.Block's table of more GPUs", `Its first (\d+) bytes hold the partition`, int64(unsafe.Offsetof(ctl.Block{}.More)), false},
		{"ctl.GPUs, less the block's first", `the partitions on up to (\d+) more GPUs`, ctl.GPUs - 1, false},
		{"ctl.NodeSlots", `a slot for each of up to (\d+) LS tenants`, ctl.NodeSlots, false},
		{"the mask words of ctl.Block", `(\d+)-bit hardware TPC mask`, int64(32 * len(ctl.Block{}.Mask)), false},
		{"ctl.NodeQuiet", `(?:no LS request for|served a request in the last) (an? \w+|\d+ \w+|\w+)`, int64(ctl.NodeQuiet), true},
		{"ctl.NodeLease", `holds no one back for longer than (an? \w+|\d+ \w+)`, int64(ctl.NodeLease), true},
		{"ctl.NarrowMin", `(?:narrowed only onto|a floor has at least) (\d+)`, ctl.NarrowMin, false},
		{"ctl.KeepEnded", `met a GPU fault \(for (an? \w+|\d+ \w+) after they end`, int64(ctl.KeepEnded), true},
		{"mps.DefaultConnections", `(?:CUDA_DEVICE_MAX_CONNECTIONS=|with |the )(\d+)(?:\x60| connections each| connections it gives)`, mps.DefaultConnections, false},
		{"CARVE_EXIT_REFUSED", `with exit status (\d+) instead of letting it run`, shimDefine(t, "CARVE_EXIT_REFUSED"), false},
		{"place.ContextReserve in MiB", `(\d+) MiB for its context`, place.ContextReserve >> 20, false},
	}
}

// shimDefine is the value of a #define of the shim's that Go has no mirror of.
func shimDefine(t *testing.T, name string) int64 {
	files, _ := filepath.Glob("../shim/*.[ch]")
	re := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.FindSubmatch(b); m != nil {
			v, _ := strconv.ParseInt(string(m[1]), 10, 64)
			return v
		}
	}
	t.Fatalf("no #define %s in shim/", name)
	return 0
}

// docDuration reads a duration as the docs write it.
func docDuration(s string) (time.Duration, error) {
	n, unit, ok := strings.Cut(s, " ")
	if !ok {
		n, unit = "1", s // "the last second"
	}
	count := 1.0
	if n != "a" && n != "an" {
		var err error
		if count, err = strconv.ParseFloat(n, 64); err != nil {
			return 0, err
		}
	}
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"second": time.Second, "seconds": time.Second, "minute": time.Minute, "minutes": time.Minute,
		"hour": time.Hour, "hours": time.Hour}
	u, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	return time.Duration(count * float64(u)), nil
}

// unchecked are numbers of the kinds below that the docs state as
// measurements, not as carve's constants.
var unchecked = []string{"DRAM fills the L2 64 bytes at a time", "a new slice every 256 bytes"}

// TestDocsStateTheConstants: every number the docs give for one of carve's
// constants is the constant's value, and every size in bytes or bits, and
// count of slots, they give is one of those or a measurement listed above.
func TestDocsStateTheConstants(t *testing.T) {
	space := regexp.MustCompile(`\s+`)
	sizes := regexp.MustCompile(`\d+(?:-byte|-bit| bytes?| slots?)\b`)
	cs := claims(t)
	found := make([]int, len(cs))
	for _, doc := range docs {
		text := space.ReplaceAllString(readDoc(t, doc), " ") // sentences run over lines
		var covered [][]int
		for i, c := range cs {
			for _, m := range regexp.MustCompile(c.re).FindAllStringSubmatchIndex(text, -1) {
				found[i]++
				covered = append(covered, m[:2])
				got, phrase := text[m[2]:m[3]], text[m[0]:m[1]]
				var v int64
				var err error
				if c.dur {
					var d time.Duration
					d, err = docDuration(got)
					v = int64(d)
				} else {
					v, err = strconv.ParseInt(got, 10, 64)
				}
				switch {
				case err != nil:
					t.Errorf("%s: %q: %v", doc, phrase, err)
				case v != c.want && c.dur:
					t.Errorf("%s says %q: %s is %v", doc, phrase, c.what, time.Duration(c.want))
				case v != c.want:
					t.Errorf("%s says %q: %s is %d", doc, phrase, c.what, c.want)
				}
			}
		}
		for _, u := range unchecked {
			if i := strings.Index(text, u); i >= 0 {
				covered = append(covered, []int{i, i + len(u)})
			}
		}
		for _, m := range sizes.FindAllStringIndex(text, -1) {
			if !slices.ContainsFunc(covered, func(c []int) bool { return c[0] <= m[0] && m[1] <= c[1] }) {
				t.Errorf("%s says %q, which no claim checks: add one to claims, or to unchecked if it was measured",
					doc, text[max(0, m[0]-40):min(len(text), m[1]+20)])
			}
		}
	}
	for i, c := range cs {
		if found[i] == 0 {
			t.Errorf("no sentence of %v matches %q (%s): reworded? change its claim", docs, c.re, c.what)
		}
	}
}

// TestShimFilesTable: ARCHITECTURE's table of the shim's files names each
// C file and header of shim/, and no other.
func TestShimFilesTable(t *testing.T) {
	named := map[string]bool{}
	for _, row := range tableNames(section(t, "ARCHITECTURE.md", "The shim's files")) {
		for _, n := range row {
			named[n] = true
		}
	}
	for _, pattern := range []string{"*.c", "*.h"} {
		files, err := filepath.Glob(filepath.Join("../shim", pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no shim/%s: %v", pattern, err)
		}
		for _, f := range files {
			if !named[filepath.Base(f)] {
				t.Errorf("shim/%s is not in ARCHITECTURE.md's table of the shim's files", filepath.Base(f))
			}
			delete(named, filepath.Base(f))
		}
	}
	for n := range named {
		t.Errorf("ARCHITECTURE.md's table of the shim's files names %s, which shim/ does not hold", n)
	}
}

// TestPackagesTable: ARCHITECTURE's table of packages names each package
// of the module, and no other; a name without cmd/, internal/, shim/ or
// experiments/ in a row is under internal/. README has no list of its own: it points there.
func TestPackagesTable(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		if p = strings.TrimPrefix(p, module); p != "internal" { // internal: this test's directory
			pkgs[p] = true
		}
	}
	for _, row := range tableNames(section(t, "ARCHITECTURE.md", "Packages, and the arrows between them")) {
		for _, n := range row {
			if !strings.HasPrefix(n, "cmd/") && !strings.HasPrefix(n, "internal/") && !strings.HasPrefix(n, "experiments/") && !strings.HasPrefix(n, "shim/") {
				n = "internal/" + n
			}
			if !pkgs[n] {
				t.Errorf("ARCHITECTURE.md's table of packages names %s, which is no package of the module", n)
			}
			delete(pkgs, n)
		}
	}
	for p := range pkgs {
		t.Errorf("package %s is not in ARCHITECTURE.md's table of packages", p)
	}
	if lines := regexp.MustCompile(`(?m)^internal/\w+/`).FindAllString(readDoc(t, "README.md"), -1); len(lines) > 0 {
		t.Errorf("README.md lists packages (%v): ARCHITECTURE.md has the one list", lines)
	}
}

// TestDocsPathsExist: every path of the tree that the docs name, in
// backquotes or as a link, is there (a Go name after a package's path,
// internal/ctl.Block, names the package; a pattern must match something).
func TestDocsPathsExist(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#]+)`)
	tops := []string{"cmd/", "internal/", "shim/", "deploy/", "experiments/", "results/", "test/"}
	for _, doc := range docs {
		text := fence.ReplaceAllString(readDoc(t, doc), "")
		var tokens []string
		for _, m := range backquoted.FindAllStringSubmatch(text, -1) {
			tokens = append(tokens, strings.Fields(m[1])...)
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			tokens = append(tokens, m[1])
		}
		for _, tok := range tokens {
			p := strings.TrimPrefix(tok, "./")
			if !slices.ContainsFunc(tops, func(top string) bool { return strings.HasPrefix(p, top) }) {
				continue
			}
			p = packageOf(p)
			if m, _ := filepath.Glob(filepath.Join("..", p)); len(m) == 0 {
				t.Errorf("%s names %s, which is not in the tree", doc, tok)
			}
		}
	}
}

// packageOf is internal/ctl for internal/ctl.Block; other paths stay.
func packageOf(p string) string {
	i := strings.LastIndexByte(p, '.')
	if i < 0 || i+1 >= len(p) || p[i+1] < 'A' || p[i+1] > 'Z' {
		return p
	}
	return p[:i]
}
