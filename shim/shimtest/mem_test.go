// Tests of the shim's device-memory account (shim/mem.c) against the fake
// driver's memory: every path charges and credits exact bytes, refusals
// change nothing, pools count by what they reserve, children share their
// tenant's limit, and the counts hold under many threads.

package shimtest_test

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

const mib = 1 << 20

// memProc starts the driver under the shim with a block of the given
// memory limit (0: none).
func memProc(t testing.TB, dir string, limit uint64, env ...string) (*proc, *ctl.Handle) {
	t.Helper()
	p, h := startExec(t, dir, ctl.Init{MemLimit: limit, Parts: []ctl.Part{{Mask: enableOnly(0), Live: live}}}, env...)
	p.ready(t)
	return p, h
}

// alloc asks for bytes by a path and returns the allocation's id, or 0 and
// the driver's rc.
func (p *proc) alloc(t testing.TB, kind string, bytes uint64) (id, rc int) {
	t.Helper()
	got := p.ask(t, fmt.Sprintf("alloc %s %d", kind, bytes))
	if _, err := fmt.Sscanf(got, "id %d", &id); err == nil {
		return id, 0
	}
	if _, err := fmt.Sscanf(got, "rc %d", &rc); err != nil {
		t.Fatalf("alloc %s %d: %q", kind, bytes, got)
	}
	return 0, rc
}

// must sends cmd and wants "rc 0".
func (p *proc) must(t testing.TB, cmd string) {
	t.Helper()
	if got := p.ask(t, cmd); got != "rc 0" {
		t.Fatalf("%s: %q; stderr: %s", cmd, got, p.stderr)
	}
}

// fake returns the fake GPU's memory taken now and at most.
func (p *proc) fake(t testing.TB) (taken, high uint64) {
	t.Helper()
	got := p.ask(t, "fakemem")
	if _, err := fmt.Sscanf(got, "fake %d %d", &taken, &high); err != nil {
		t.Fatalf("fakemem: %q", got)
	}
	return taken, high
}

// holds checks that the process holds want bytes as its block, its
// account and the fake GPU count them.
func holds(t testing.TB, p *proc, h *ctl.Handle, want uint64, what string) {
	t.Helper()
	m := h.Snapshot().Memory
	taken, _ := p.fake(t)
	if m.Used != want || m.Total != want || taken != want {
		t.Errorf("%s: used %d, account %d, the fake GPU %d; want %d each", what, m.Used, m.Total, taken, want)
	}
}

// mipmapBytes is what "alloc mipmap N" takes: three levels of a square of
// floats.
func mipmapBytes(n uint64) uint64 { return 4 * (n*n + n/2*n/2 + n/4*n/4) }

// TestMemPathsChargeAndCredit: each path that takes device memory charges
// exactly what it takes, to the process and its account, and its free
// credits it back, with a limit or without.
func TestMemPathsChargeAndCredit(t *testing.T) {
	paths := []struct {
		kind  string
		bytes uint64
		want  uint64
	}{
		{"mem", 3 * mib, 3 * mib},
		{"v1", 3 * mib, 3 * mib},
		{"direct", 3 * mib, 3 * mib},
		{"pitch", 1000, 1024 * 4},
		{"managed", 5 * mib, 5 * mib},
		{"array", 64 * 1024, 64 * 1024},
		{"array3d", 64 * 1024, 64 * 1024},
		{"mipmap", 64, mipmapBytes(64)},
		{"vmm", 2 * mib, 2 * mib},
	}
	for _, limit := range []uint64{0, 1 << 30} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			p, h := memProc(t, t.TempDir(), limit)
			for _, c := range paths {
				id, rc := p.alloc(t, c.kind, c.bytes)
				if rc != 0 {
					t.Fatalf("alloc %s: rc %d; stderr: %s", c.kind, rc, p.stderr)
				}
				holds(t, p, h, c.want, "alloc "+c.kind)
				p.must(t, fmt.Sprintf("free %d", id))
				holds(t, p, h, 0, "free "+c.kind)
			}
			if m := h.Snapshot().Memory; m.Limit != limit || m.Refused != 0 || !m.LastRefused.IsZero() {
				t.Errorf("memory %+v, want limit %d, none refused", m, limit)
			}
			p.wait(t)
		})
	}
}

// TestMemPoolsCountReserved: stream-ordered allocations count what their
// pool reserves, which a free does not change; a pool gives memory back at
// a synchronization beyond its release threshold, or when trimmed or
// destroyed, and the account follows.
func TestMemPoolsCountReserved(t *testing.T) {
	p, h := memProc(t, t.TempDir(), 1<<30)
	// the device's default pool: release threshold 0
	a, _ := p.alloc(t, "async", 3*mib)
	holds(t, p, h, 4*mib, "3 MiB from the default pool, which grows by 2 MiB")
	p.must(t, fmt.Sprintf("free %d", a))
	holds(t, p, h, 4*mib, "after its free, the pool keeps it")
	p.must(t, "sync")
	holds(t, p, h, 0, "after a synchronization, the pool gives back what is beyond its threshold")

	// a pool of its own that keeps everything, as PyTorch sets it
	p.must(t, "pool new")
	p.must(t, fmt.Sprintf("pool threshold %d", uint64(1<<64-1)))
	a, _ = p.alloc(t, "pool", 5*mib)
	b, _ := p.alloc(t, "pool", 1*mib)
	holds(t, p, h, 6*mib, "5 and 1 MiB from a pool")
	p.must(t, fmt.Sprintf("free %d", a))
	p.must(t, "sync")
	holds(t, p, h, 6*mib, "a pool that keeps all, after a free and a synchronization")
	c, _ := p.alloc(t, "pool", 4*mib)
	holds(t, p, h, 6*mib, "4 MiB more, from what the pool kept")
	p.must(t, fmt.Sprintf("free %d", c))
	p.must(t, "pool trim 0")
	holds(t, p, h, 2*mib, "trimmed: it keeps what is in use")
	p.must(t, fmt.Sprintf("free %d", b))
	p.must(t, "pool destroy")
	holds(t, p, h, 0, "its pool destroyed")

	// the device's current pool, set to one of its own
	p.must(t, "pool new")
	p.must(t, "pool set")
	a, _ = p.alloc(t, "async", 1*mib)
	holds(t, p, h, 2*mib, "cuMemAllocAsync from the device's current pool")
	p.must(t, fmt.Sprintf("free %d", a))
	p.must(t, "pool trim 0")
	holds(t, p, h, 0, "trimmed")

	// a pool of host memory takes none of the GPU's
	p.must(t, "pool host")
	if _, rc := p.alloc(t, "pool", 3*mib); rc != 0 {
		t.Fatalf("from a host pool: rc %d", rc)
	}
	if m := h.Snapshot().Memory; m.Used != 0 {
		t.Errorf("a host pool's memory counted: %+v", m)
	}
	p.wait(t)
}

// TestMemPoolTrimmedBeforeRefusal: memory a pool keeps unused is given back
// before an allocation is refused for it.
func TestMemPoolTrimmedBeforeRefusal(t *testing.T) {
	p, h := memProc(t, t.TempDir(), 10*mib)
	p.must(t, "pool new")
	p.must(t, fmt.Sprintf("pool threshold %d", uint64(1<<64-1)))
	a, _ := p.alloc(t, "pool", 8*mib)
	p.must(t, fmt.Sprintf("free %d", a))
	holds(t, p, h, 8*mib, "the pool keeps 8 MiB")
	if _, rc := p.alloc(t, "mem", 4*mib); rc != 0 {
		t.Fatalf("4 MiB beside a pool keeping 8 MiB unused, under 10 MiB: rc %d; stderr: %s", rc, p.stderr)
	}
	holds(t, p, h, 4*mib, "the pool trimmed for it")
	if got := p.ask(t, "pool reserved"); got != "reserved 0" {
		t.Errorf("the pool after the trim: %q", got)
	}
	if _, high := p.fake(t); high > 10*mib {
		t.Errorf("the fake GPU held %d bytes at most, past the limit", high)
	}
	if m := h.Snapshot().Memory; m.Refused != 0 || m.Peak != 8*mib {
		t.Errorf("memory %+v, want none refused and a peak of 8 MiB", m)
	}
	p.wait(t)
}

// TestMemRefusalChangesNothing: an allocation by any path that would pass
// the limit fails with CUDA_ERROR_OUT_OF_MEMORY before the driver sees it,
// and the account, the block and the GPU stay as they were; another
// tenant's process beside it allocates on.
func TestMemRefusalChangesNothing(t *testing.T) {
	dir := t.TempDir()
	p, h := memProc(t, dir, 4*mib)
	if _, rc := p.alloc(t, "mem", 3*mib); rc != 0 {
		t.Fatalf("3 MiB under 4: rc %d", rc)
	}
	refusals := []string{"alloc mem 2097152", "alloc v1 2097152", "alloc direct 2097152", "alloc pitch 524288",
		"alloc managed 2097152", "alloc async 1048576", "alloc array 2097152", "alloc array3d 2097152",
		"alloc mipmap 1024", "alloc vmm 2097152", "alloc graph 2097152", "capture 2097152",
		fmt.Sprintf("heap %d", 8*mib+2*mib)}
	p.must(t, "pool new")
	refusals = append(refusals, "alloc pool 1048576")
	for _, cmd := range refusals {
		if got := p.ask(t, cmd); got != "rc 2" {
			t.Errorf("%s past the limit: %q, want rc 2 (CUDA_ERROR_OUT_OF_MEMORY)", cmd, got)
		}
		holds(t, p, h, 3*mib, "after "+cmd)
	}
	if m := h.Snapshot().Memory; m.Refused != uint64(len(refusals)) || time.Since(m.LastRefused) > time.Minute {
		t.Errorf("refused %d, the last at %v; want %d, just now", m.Refused, m.LastRefused, len(refusals))
	}

	// a neighbour: another tenant, its own limit
	q, hq := memProc(t, dir, 4*mib)
	if _, rc := q.alloc(t, "mem", 3*mib); rc != 0 {
		t.Errorf("another tenant beside a refused one: rc %d", rc)
	}
	holds(t, q, hq, 3*mib, "the neighbour")
	q.wait(t)
	p.wait(t)
	if !strings.Contains(p.stderr.String(), "refused an allocation of") {
		t.Errorf("the shim did not say why it refused: %s", p.stderr)
	}
}

// TestMemToldTheLimit: a limited tenant is told the limit as the GPU's
// total memory and the limit less what it holds as free, by every flavour
// of cuMemGetInfo and cuDeviceTotalMem; an unlimited one the driver's
// numbers.
func TestMemToldTheLimit(t *testing.T) {
	gpu := uint64(81079) * mib
	p, _ := memProc(t, t.TempDir(), 0)
	p.alloc(t, "mem", 100*mib)
	for cmd, want := range map[string]string{
		"meminfo":  fmt.Sprintf("meminfo %d %d rc 0", gpu-100*mib, gpu),
		"totalmem": fmt.Sprintf("totalmem %d rc 0", gpu),
		// the 32-bit flavours, saturated
		"meminfo v1":  fmt.Sprintf("meminfo %d %d rc 0", uint32(1<<32-1), uint32(1<<32-1)),
		"totalmem v1": fmt.Sprintf("totalmem %d rc 0", uint32(1<<32-1)),
	} {
		if got := p.ask(t, cmd); got != want {
			t.Errorf("unlimited, %s: %q, want %q", cmd, got, want)
		}
	}
	p.wait(t)

	p, _ = memProc(t, t.TempDir(), 1<<30)
	p.alloc(t, "mem", 100*mib)
	for cmd, want := range map[string]string{
		"meminfo":     fmt.Sprintf("meminfo %d %d rc 0", 924*mib, 1024*mib),
		"totalmem":    fmt.Sprintf("totalmem %d rc 0", 1024*mib),
		"meminfo v1":  fmt.Sprintf("meminfo %d %d rc 0", 924*mib, 1024*mib),
		"totalmem v1": fmt.Sprintf("totalmem %d rc 0", 1024*mib),
	} {
		if got := p.ask(t, cmd); got != want {
			t.Errorf("a limit of 1 GiB, %s: %q, want %q", cmd, got, want)
		}
	}
	// a GPU with less free than the limit leaves: what it has
	if got := p.ask(t, "fakemb 512"); got != "ok" {
		t.Fatal(got)
	}
	if got, want := p.ask(t, "meminfo"), fmt.Sprintf("meminfo %d %d rc 0", 412*mib, 512*mib); got != want {
		t.Errorf("a limit of 1 GiB on a GPU of 512 MiB: %q, want %q", got, want)
	}
	p.wait(t)
}

// TestMemVersionedLookups: cuGetProcAddress("cuMemAlloc") for CUDA 3.0
// gets the 32-bit flavour's wrapper, which calls the driver's 32-bit
// flavour, and for CUDA 12.8 the later one's, whichever is looked up
// first; the 32-bit arrays, which the shim does not count, are refused.
func TestMemVersionedLookups(t *testing.T) {
	for _, order := range [][]string{{"mem", "v1"}, {"v1", "mem"}} {
		p, h := memProc(t, t.TempDir(), 1<<30)
		var v1, v2 int
		for _, kind := range order {
			id, rc := p.alloc(t, kind, 2*mib)
			if rc != 0 {
				t.Fatalf("alloc %s: rc %d", kind, rc)
			}
			p.must(t, fmt.Sprintf("free %d", id))
			if kind == "v1" {
				v1 += 2
			} else {
				v2 += 2
			}
			if got, want := p.ask(t, "flavours"), fmt.Sprintf("flavours %d %d", v1, v2); got != want {
				t.Errorf("%v, after %s: the fake's flavours called %q, want %q", order, kind, got, want)
			}
		}
		if m := h.Snapshot().Memory; m.Used != 0 || m.Peak != 2*mib {
			t.Errorf("%v: %+v, want 2 MiB at most and none now", order, m)
		}
		p.wait(t)
	}

	p, h := memProc(t, t.TempDir(), 0)
	if _, rc := p.alloc(t, "array1", 64*1024); rc != 801 {
		t.Errorf("cuArrayCreate of CUDA 3.0: rc %d, want 801 (CUDA_ERROR_NOT_SUPPORTED)", rc)
	}
	holds(t, p, h, 0, "a refused 32-bit array")
	p.wait(t)
	if !strings.Contains(p.stderr.String(), "cuArrayCreate of CUDA before 3.2") {
		t.Errorf("no word of the refused flavour: %s", p.stderr)
	}
}

// TestMemTraceProcs: CARVE_TRACE_PROCS=1 logs each lookup of a memory call,
// with its version and flags, and what the shim made of it.
func TestMemTraceProcs(t *testing.T) {
	p, _ := memProc(t, t.TempDir(), 0, "CARVE_TRACE_PROCS=1")
	for _, cmd := range []string{"lookup cuMemAlloc 12080", "lookup cuMemAlloc 3000", "lookup cuMemAllocAsync 12080 ptds",
		"lookup cuIpcOpenMemHandle 12080", "lookup cuArrayCreate 3000", "lookup cuMemcpyHtoD 12080",
		"lookup cuMemAddressReserve 12080", "lookup cuLaunchKernel 12080", "alloc direct 4096"} {
		p.ask(t, cmd)
	}
	p.wait(t)
	log := p.stderr.String()
	for _, want := range []string{
		"proc cuMemAlloc version 12080 flags 0 (cuGetProcAddress): wrapped: cuMemAlloc_v2",
		"proc cuMemAlloc version 3000 flags 0 (cuGetProcAddress): wrapped: cuMemAlloc\n",
		"proc cuMemAllocAsync version 12080 flags 0x2 (cuGetProcAddress): wrapped: cuMemAllocAsync_ptsz",
		"proc cuIpcOpenMemHandle version 12080 flags 0 (cuGetProcAddress): passed through: memory shared between processes",
		"proc cuArrayCreate version 3000 flags 0 (cuGetProcAddress): refused: cuArrayCreate",
		"proc cuMemcpyHtoD version 12080 flags 0 (cuGetProcAddress): the driver has none",
		"proc cuMemAddressReserve version 12080 flags 0 (cuGetProcAddress): passed through: address space",
		"proc cuMemAlloc_v2 (dlsym): wrapped: cuMemAlloc_v2",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the trace lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "cuLaunchKernel") {
		t.Errorf("the trace names a call that is not memory's:\n%s", log)
	}
}

// TestMemChildrenShareTheLimit: a child process counts into its tenant's
// account, and the allocation that would pass the tenant's limit fails in
// whichever process makes it.
func TestMemChildrenShareTheLimit(t *testing.T) {
	dir := t.TempDir()
	p, h := memProc(t, dir, 100*mib)
	p.alloc(t, "mem", 60*mib)
	held := strings.SplitN(p.ask(t, fmt.Sprintf("hold alloc mem %d", 30*mib)), " ", 3)
	if len(held) != 3 || !strings.HasPrefix(held[2], "ready|id ") {
		t.Fatalf("hold: %q; stderr: %s", held, p.stderr)
	}
	pid, _ := strconv.Atoi(held[1])
	child, err := ctl.Open(dir, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if _, rc := p.alloc(t, "mem", 20*mib); rc != 2 {
		t.Errorf("the parent's 20 MiB past the tenant's 100: rc %d, want 2", rc)
	}
	if got := p.ask(t, fmt.Sprintf("tell alloc mem %d", 20*mib)); got != "told rc 2" {
		t.Errorf("the child's 20 MiB past the tenant's 100: %q, want told rc 2", got)
	}
	if got := p.ask(t, fmt.Sprintf("tell alloc mem %d", 10*mib)); !strings.HasPrefix(got, "told id ") {
		t.Errorf("the child's 10 MiB up to the tenant's 100: %q", got)
	}
	pm, cm := h.Snapshot().Memory, child.Snapshot().Memory
	if pm.Used != 60*mib || pm.Total != 100*mib || cm.Used != 40*mib || blockOf(t, child).MemTotal != 0 ||
		cm.Limit != 100*mib || pm.Refused != 2 || cm.Refused != 1 {
		t.Errorf("parent %+v, child %+v: want 60 and 40 MiB of an account of 100 in the parent's block, "+
			"the tenant's two refusals there and the child's one in its own", pm, cm)
	}
	if got := p.ask(t, "reap"); got != fmt.Sprintf("ended %d 0", pid) {
		t.Errorf("reap: %q", got)
	}
	if pm, cm := h.Snapshot().Memory, child.Snapshot().Memory; pm.Total != 60*mib || cm.Used != 0 {
		t.Errorf("after the child exited: parent %+v, child %+v; want its 40 MiB back", pm, cm)
	}
	p.wait(t)
}

// TestMemKilledProcessCredited: a process of the tenant killed while it
// holds memory leaves its share in the account; the next allocation that
// would be refused for it credits it first and succeeds, and carve's
// CreditEnded does the same.
func TestMemKilledProcessCredited(t *testing.T) {
	for _, byCarve := range []bool{false, true} {
		t.Run(map[bool]string{false: "by the shim", true: "by carve"}[byCarve], func(t *testing.T) {
			dir := t.TempDir()
			p, h := memProc(t, dir, 100*mib)
			p.alloc(t, "mem", 40*mib)
			held := strings.SplitN(p.ask(t, fmt.Sprintf("hold alloc mem %d", 50*mib)), " ", 3)
			if len(held) != 3 || !strings.HasPrefix(held[2], "ready|id ") {
				t.Fatalf("hold: %q", held)
			}
			if got := p.ask(t, "kill"); got != "ended "+held[1]+" 137" {
				t.Fatalf("kill: %q", got)
			}
			if m := h.Snapshot().Memory; m.Total != 90*mib {
				t.Fatalf("after the kill, the account holds %d, want the dead child's 50 MiB still in it", m.Total)
			}
			if byCarve {
				n, err := ctl.CreditEnded(dir)
				if err != nil || n != 50*mib {
					t.Fatalf("CreditEnded: %d, %v; want 50 MiB", n, err)
				}
				if n, _ := ctl.CreditEnded(dir); n != 0 {
					t.Errorf("CreditEnded again: %d, want 0", n)
				}
				if m := h.Snapshot().Memory; m.Total != 40*mib {
					t.Errorf("after CreditEnded, the account holds %d, want 40 MiB", m.Total)
				}
			}
			if _, rc := p.alloc(t, "mem", 40*mib); rc != 0 {
				t.Fatalf("40 MiB, with the dead child's 50 MiB to credit: rc %d; stderr: %s", rc, p.stderr)
			}
			if m := h.Snapshot().Memory; m.Total != 80*mib || m.Used != 80*mib || m.Refused != 0 {
				t.Errorf("memory %+v, want 80 MiB, none refused", m)
			}
			p.wait(t)
		})
	}
}

// TestMemManyThreads: eight threads, each making 10,000 random allocations
// and frees over every path with synchronizations, trims and graph launches
// between, lose no update: at the end the process's block and its account
// hold what the fake GPU says is taken, and the GPU never held more than
// the limit.
func TestMemManyThreads(t *testing.T) {
	const limit = 256 * mib
	p, h := memProc(t, t.TempDir(), limit)
	got := p.ask(t, "stress 8 10000 1")
	var ok, refused, errs int
	if _, err := fmt.Sscanf(got, "stress %d %d %d", &ok, &refused, &errs); err != nil || errs != 0 || ok == 0 {
		t.Fatalf("stress: %q, want no errors; stderr: %s", got, p.stderr)
	}
	m := h.Snapshot().Memory
	taken, high := p.fake(t)
	if m.Used != taken || m.Total != taken {
		t.Errorf("the block holds %d and its account %d, the fake GPU %d: an update was lost", m.Used, m.Total, taken)
	}
	if high > limit || m.Peak > limit {
		t.Errorf("the fake GPU held %d at most, the account %d, past the limit %d", high, m.Peak, uint64(limit))
	}
	if m.Refused != uint64(refused) {
		t.Errorf("the block counts %d refusals, the threads met %d", m.Refused, refused)
	}
	t.Logf("%d allocations, %d refused, %d bytes held at the end, %d at most", ok, refused, taken, high)
	p.wait(t)
}

// TestMemGraphs: a graph's allocation nodes take memory when it is launched
// (or uploaded): the device's graph memory, counted as it grows, given back
// by cuDeviceGraphMemTrim. A node must fit the limit when made, and a
// launch whose memory would pass the limit is refused before it runs.
func TestMemGraphs(t *testing.T) {
	p, h := memProc(t, t.TempDir(), 8*mib)
	g, rc := p.alloc(t, "graph", 3*mib)
	if rc != 0 {
		t.Fatalf("graph: rc %d", rc)
	}
	holds(t, p, h, 0, "a graph made, not launched")
	p.must(t, fmt.Sprintf("glaunch %d", g))
	holds(t, p, h, 4*mib, "launched: its 3 MiB, in the 2 MiB graph memory grows by")
	p.must(t, fmt.Sprintf("glaunch %d", g))
	holds(t, p, h, 4*mib, "launched again, in the same memory")
	p.must(t, "gtrim")
	holds(t, p, h, 0, "trimmed")
	c := p.ask(t, fmt.Sprintf("capture %d", 1*mib))
	var cid int
	if _, err := fmt.Sscanf(c, "id %d", &cid); err != nil {
		t.Fatalf("capture: %q", c)
	}
	p.must(t, fmt.Sprintf("gupload %d", cid))
	holds(t, p, h, 2*mib, "a captured allocation's graph uploaded")
	p.must(t, "gtrim")

	m, _ := p.alloc(t, "mem", 6*mib)
	if got := p.ask(t, fmt.Sprintf("alloc graph %d", 3*mib)); got != "rc 2" {
		t.Errorf("an allocation node of 3 MiB beside 6 MiB under 8: %q, want rc 2", got)
	}
	if got := p.ask(t, fmt.Sprintf("glaunch %d", g)); got != "rc 2" {
		t.Errorf("a launch needing 4 MiB beside 6 MiB under 8: %q, want rc 2", got)
	}
	holds(t, p, h, 6*mib, "after the refusals")
	p.must(t, fmt.Sprintf("free %d", m))
	p.must(t, fmt.Sprintf("glaunch %d", g))
	if _, rc := p.alloc(t, "mem", 6*mib); rc != 0 {
		t.Errorf("6 MiB beside 4 MiB of graph memory unused, under 8: rc %d (graph memory not trimmed first)", rc)
	}
	holds(t, p, h, 6*mib, "graph memory trimmed for an allocation")
	p.wait(t)
}

// TestMemVirtual: memory made with cuMemCreate is held until its handle is
// released and unmapped everywhere, however many references it has.
func TestMemVirtual(t *testing.T) {
	p, h := memProc(t, t.TempDir(), 1<<30)
	a, _ := p.alloc(t, "vmm", 4*mib)
	p.must(t, fmt.Sprintf("release %d", a))
	holds(t, p, h, 4*mib, "released, still mapped")
	p.must(t, fmt.Sprintf("unmap %d", a))
	holds(t, p, h, 0, "released and unmapped")

	b, _ := p.alloc(t, "vmm", 2*mib)
	p.must(t, fmt.Sprintf("retain %d", b))
	p.must(t, fmt.Sprintf("release %d", b))
	p.must(t, fmt.Sprintf("unmap %d", b))
	holds(t, p, h, 2*mib, "unmapped, one of two references released")
	p.must(t, fmt.Sprintf("release %d", b))
	holds(t, p, h, 0, "the second reference released")
	p.wait(t)
}

// TestMemHeap: the device malloc heap counts what it is set to beyond the
// size the context had; a context destroyed takes its memory with it.
func TestMemHeap(t *testing.T) {
	p, h := memProc(t, t.TempDir(), 64*mib)
	p.must(t, fmt.Sprintf("heap %d", 24*mib))
	holds(t, p, h, 16*mib, "a heap of 24 MiB where the context had 8")
	p.must(t, fmt.Sprintf("heap %d", 12*mib))
	holds(t, p, h, 4*mib, "12 MiB")
	p.must(t, fmt.Sprintf("heap %d", 4*mib))
	holds(t, p, h, 0, "4 MiB, less than the context had")
	if got := p.ask(t, fmt.Sprintf("heap %d", 80*mib)); got != "rc 2" {
		t.Errorf("a heap past the limit: %q", got)
	}
	holds(t, p, h, 0, "after a refused heap")

	if got := p.ask(t, "ctxnew 0"); !strings.HasPrefix(got, "ctx ") {
		t.Fatalf("ctxnew: %q", got)
	}
	p.alloc(t, "mem", 5*mib)
	p.alloc(t, "array", 64*1024)
	p.must(t, fmt.Sprintf("heap %d", 10*mib))
	holds(t, p, h, 5*mib+64*1024+2*mib, "in a context of its own")
	p.must(t, "ctxdel")
	holds(t, p, h, 0, "the context destroyed")
	p.wait(t)
}

// TestMemImportsChargeTheExporter: memory opened from another process's IPC
// handle is the exporter's: the importer's account does not count it.
func TestMemImportsChargeTheExporter(t *testing.T) {
	dir := t.TempDir()
	p, h := memProc(t, dir, 100*mib)
	a, _ := p.alloc(t, "mem", 30*mib)
	handle := strings.TrimPrefix(p.ask(t, fmt.Sprintf("ipcget %d", a)), "ipc ")
	held := strings.SplitN(p.ask(t, "hold ipcopen "+handle), " ", 3)
	if len(held) != 3 || !strings.HasPrefix(held[2], "ready|id ") {
		t.Fatalf("hold ipcopen: %q", held)
	}
	pid, _ := strconv.Atoi(held[1])
	child, err := ctl.Open(dir, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if pm, cm := h.Snapshot().Memory, child.Snapshot().Memory; pm.Total != 30*mib || cm.Used != 0 {
		t.Errorf("exporter %+v, importer %+v: want 30 MiB, all the exporter's", pm, cm)
	}
	p.ask(t, "reap")
	p.wait(t)
}

// TestMemWithoutBlock: where the shim has no block (no CARVE_CTL_DIR), the
// memory calls pass straight to the driver.
func TestMemWithoutBlock(t *testing.T) {
	a := artifacts(t)
	cmd := exec.Command(a.Driver)
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "CARVE_LIBCUDA=" + a.Fake}
	cmd.Stdin = strings.NewReader("alloc mem 1048576\nalloc array1 65536\nmeminfo\nfakemem\n")
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("ready\nid 1\nid 2\nmeminfo %d %d rc 0\nfake %d %d\n", uint64(81079)*mib-mib-65536,
		uint64(81079)*mib, mib+65536, mib+65536)
	if err != nil || string(out) != want {
		t.Errorf("without a block: %v\n%s\nwant\n%s", err, out, want)
	}
}

// BenchmarkAllocCost: host time of a cuMemAlloc_v2 and cuMemFree_v2 pair of
// 4 KiB against the fake driver (go test -bench AllocCost ./shim/shimtest):
// without the shim, with it and no limit, with a limit. The fake's own cost
// is the same in each, so the differences are the shim's.
func BenchmarkAllocCost(b *testing.B) {
	for _, c := range []struct {
		name  string
		start func(b *testing.B, dir string) *proc
	}{
		{"no shim", func(b *testing.B, dir string) *proc { return startNoShim(b) }},
		{"shim, no limit", func(b *testing.B, dir string) *proc { p, _ := memProc(b, dir, 0); return p }},
		{"shim, limit", func(b *testing.B, dir string) *proc { p, _ := memProc(b, dir, 1<<30); return p }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := c.start(b, b.TempDir())
			p.ask(b, "memcost 10000") // warm
			b.ResetTimer()
			got := p.ask(b, fmt.Sprintf("memcost %d", b.N))
			b.StopTimer()
			var ns float64
			if _, err := fmt.Sscanf(got, "memcost %g", &ns); err != nil {
				b.Fatalf("memcost: %q", got)
			}
			b.ReportMetric(ns, "ns/pair")
			p.wait(b)
		})
	}
}
