// Tests that the shim's files call each other without a circle: each file
// compiled on its own, which files it uses read from the objects' symbols.

package shimtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fileCalls compiles each of the shim's files on its own and reads the
// objects' symbols: file a uses file b when a refers to a global symbol
// that b defines. It returns, for each file, the files it uses and through
// which symbols.
func fileCalls(t *testing.T) map[string]map[string][]string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	sources, err := filepath.Glob(filepath.Join(ShimDir(), "*.c"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no shim sources: %v", err)
	}
	dir := t.TempDir()
	defines := map[string]string{} // symbol -> file
	uses := map[string][]string{}  // file -> symbols it refers to
	for _, src := range sources {
		name := filepath.Base(src)
		obj := filepath.Join(dir, strings.TrimSuffix(name, ".c")+".o")
		args := append(append([]string{}, CFlags...), "-c", "-o", obj, src)
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
		}
		out, err := exec.Command("nm", obj).Output()
		if err != nil {
			t.Fatalf("nm %s: %v", obj, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "U":
				uses[name] = append(uses[name], f[1])
			case len(f) == 3 && strings.ContainsAny(f[1], "TDBRC"):
				defines[f[2]] = name
			}
		}
	}
	calls := map[string]map[string][]string{}
	for file, syms := range uses {
		for _, s := range syms {
			if to, ok := defines[s]; ok && to != file {
				if calls[file] == nil {
					calls[file] = map[string][]string{}
				}
				calls[file][to] = append(calls[file][to], s)
			}
		}
	}
	return calls
}

// cycle returns a circle of files, each using the next, or nil.
func cycle(calls map[string]map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(f string) []string
	visit = func(f string) []string {
		state[f] = open
		path = append(path, f)
		tos := make([]string, 0, len(calls[f]))
		for to := range calls[f] {
			tos = append(tos, to)
		}
		slices.Sort(tos)
		for _, to := range tos {
			switch state[to] {
			case open:
				i := slices.Index(path, to)
				return append(slices.Clone(path[i:]), to)
			case unseen:
				if c := visit(to); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[f] = done
		return nil
	}
	files := make([]string, 0, len(calls))
	for f := range calls {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		if state[f] == unseen {
			if c := visit(f); c != nil {
				return c
			}
		}
	}
	return nil
}

// TestShimFilesFormNoCircle: no file of the shim calls, through others or
// directly, a file that calls it; base.c, which every file uses, uses none.
func TestShimFilesFormNoCircle(t *testing.T) {
	calls := fileCalls(t)
	if c := cycle(calls); c != nil {
		var why []string
		for i := 0; i+1 < len(c); i++ {
			why = append(why, c[i]+" -> "+c[i+1]+" ("+strings.Join(calls[c[i]][c[i+1]], ", ")+")")
		}
		t.Errorf("the shim's files call each other in a circle: %s", strings.Join(why, "; "))
	}
	if len(calls["base.c"]) != 0 {
		t.Errorf("base.c uses other files of the shim: %v", calls["base.c"])
	}
	if len(calls["main.c"]) == 0 || len(calls["tide.c"]) == 0 {
		t.Errorf("no calls between files found (%v): the symbol reading is broken", calls)
	}
}

// TestCycleFound: the check above finds a circle where there is one.
func TestCycleFound(t *testing.T) {
	calls := map[string]map[string][]string{
		"a.c": {"b.c": {"f"}},
		"b.c": {"c.c": {"g"}, "d.c": {"h"}},
		"c.c": {"a.c": {"i"}},
	}
	if got, want := cycle(calls), []string{"a.c", "b.c", "c.c", "a.c"}; !slices.Equal(got, want) {
		t.Errorf("cycle = %v, want %v", got, want)
	}
	delete(calls, "c.c")
	if got := cycle(calls); got != nil {
		t.Errorf("cycle = %v in a graph without one", got)
	}
}
