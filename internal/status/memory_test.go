// Tests of status.go's memory columns: each row's tenant memory and limit,
// and a tenant refused at its limit marked.

package status

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
)

const gib = 1 << 30

// poke writes v into the field at offset of the block at path, as a shim
// does.
func poke(t *testing.T, path string, offset uintptr, v uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := binary.LittleEndian.AppendUint64(nil, v)
	if _, err := f.WriteAt(b, int64(offset)); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryRows: each row has its tenant's memory, the bytes in JSON and
// used/limit in ls's MEM column, from the tenant's account block (its
// first process's, a claim's root); a tenant whose allocations were
// refused at its limit is marked in every process's state.
func TestMemoryRows(t *testing.T) {
	dir := t.TempDir()
	var pids []int
	for range 3 {
		p := exec.Command("sleep", "30")
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
		pids = append(pids, p.Process.Pid)
	}
	var b ctl.Block
	block := func(pid, tenant int, limit uint64) string {
		h, err := ctl.Create(dir, ctl.Init{PID: pid, Tenant: tenant, MemLimit: limit, Comm: []string{"job"}})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		return filepath.Join(dir, strconv.Itoa(pid))
	}
	root, child := block(pids[0], pids[0], 12*gib), block(pids[1], pids[0], 12*gib)
	block(pids[2], pids[2], 0)
	poke(t, root, unsafe.Offsetof(b.MemUsed), gib)
	poke(t, root, unsafe.Offsetof(b.MemTotal), 3*gib)
	poke(t, root, unsafe.Offsetof(b.MemPeak), 4*gib)
	poke(t, root, unsafe.Offsetof(b.MemRefused), 2)
	poke(t, root, unsafe.Offsetof(b.MemRefusedNS), uint64(time.Now().UnixNano()))
	poke(t, child, unsafe.Offsetof(b.MemUsed), 2*gib)
	cd, _ := ctl.ClaimDir(dir, "uid-a")
	os.MkdirAll(cd, 0o755)
	h, err := ctl.CreateClaimRoot(cd, ctl.Init{MemLimit: 8 * gib, Comm: []string{"claim", "ns/a"}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	poke(t, filepath.Join(cd, ctl.ClaimRoot), unsafe.Offsetof(b.MemTotal), 5*gib)

	rows, err := List(dir, nil)
	if err != nil || len(rows) != 4 {
		t.Fatalf("rows %+v %v", rows, err)
	}
	want := map[int]Memory{
		pids[0]: {Limit: 12 * gib, Used: gib, TenantUsed: 3 * gib, Peak: 4 * gib, Refused: 2},
		pids[1]: {Limit: 12 * gib, Used: 2 * gib, TenantUsed: 3 * gib, Peak: 4 * gib, Refused: 2},
		pids[2]: {},
		0:       {Limit: 8 * gib, Used: 5 * gib, TenantUsed: 5 * gib},
	}
	for _, r := range rows {
		m := r.Memory
		m.LastRefused = ""
		if m != want[r.PID] || (r.Memory.LastRefused != "") != (m.Refused > 0) {
			t.Errorf("pid %d: memory %+v, want %+v", r.PID, r.Memory, want[r.PID])
		}
	}
	js, _ := json.Marshal(rows[0])
	if !strings.Contains(string(js), `"memory":{"limit":12884901888,"used":1073741824,"tenant_used":3221225472,"peak":4294967296,"refused":2,`) {
		t.Errorf("JSON: %s", js)
	}
	var out strings.Builder
	WriteTable(&out, rows, time.Now(), nil)
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], " MEM ") {
		t.Errorf("no MEM column:\n%s", out.String())
	}
	line := map[string]string{} // by pid, "-" for the claim
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			line[f[0]] = l
		}
	}
	for _, tc := range []struct {
		pid    string
		mem    string
		marked bool
	}{{strconv.Itoa(pids[0]), "3G/12G", true}, {strconv.Itoa(pids[1]), "3G/12G", true}, {strconv.Itoa(pids[2]), " - ", false}, {"-", "5G/8G", false}} {
		if !strings.Contains(line[tc.pid], tc.mem) {
			t.Errorf("pid %s lacks %q:\n%s", tc.pid, tc.mem, out.String())
		}
		if got := strings.Contains(line[tc.pid], "MEMORY LIMIT hit, 2 allocations refused"); got != tc.marked {
			t.Errorf("pid %s marked %v, want %v:\n%s", tc.pid, got, tc.marked, out.String())
		}
	}
	var top strings.Builder
	WriteTop(&top, rows, nil, time.Now(), time.Second)
	if !strings.Contains(top.String(), "3G/12G") || !strings.Contains(top.String(), "MEMORY LIMIT hit") {
		t.Errorf("top:\n%s", top.String())
	}
}
