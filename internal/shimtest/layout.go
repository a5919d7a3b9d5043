// The layout program's report (shim/test/layout.c): what the C compiler
// makes of the shim's headers, for the tests that compare Go's mirrors
// with them (internal/ctl) and those that read the fields from them.

package shimtest

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// Layout runs the C program that prints the headers' layouts: per struct
// ("" for carve_ctl, "part", "node", "slot", "ls", "lsproc", "be"), each field's offset and size
// (and the struct's in "sizeof"); the fault codes; and the constants (in
// fields["const"], value in [0]). Its lines of each field's kind ("kind
// NAME KIND") are left to those that read them.
func Layout(t testing.TB) (fields map[string]map[string][2]uintptr, faults map[uint32]string) {
	t.Helper()
	out, err := exec.Command(Build(t).Layout).Output()
	if err != nil {
		t.Fatal(err)
	}
	fields = map[string]map[string][2]uintptr{}
	faults = map[uint32]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "kind ") {
			continue
		}
		var code uint32
		var name string
		if _, err := fmt.Sscanf(line, "faultcode %d %s", &code, &name); err == nil {
			faults[code] = name
			continue
		}
		var value uint64
		if rest, ok := strings.CutPrefix(line, "const "); ok {
			i := strings.LastIndexByte(rest, ' ')
			if _, err := fmt.Sscanf(rest[i+1:], "%d", &value); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if fields["const"] == nil {
				fields["const"] = map[string][2]uintptr{}
			}
			fields["const"][rest[:i]] = [2]uintptr{uintptr(value)}
			continue
		}
		var off, size uintptr
		if _, err := fmt.Sscanf(line, "%s %d %d", &name, &off, &size); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		st, field, ok := strings.Cut(name, ".")
		if !ok {
			st, field = "", name
		}
		if fields[st] == nil {
			fields[st] = map[string][2]uintptr{}
		}
		fields[st][field] = [2]uintptr{off, size}
	}
	return fields, faults
}
