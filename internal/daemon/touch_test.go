// Tests of touch.go: carve mps touch started once for each process of a
// claim under MPS, again for a new process at an old path, never for a
// claim outside MPS or another user's processes; and by the daemon's pass.

package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
)

// claimInit is claim name's reservation with flags.
func claimInit(name string, flags uint32) ctl.Init {
	return ctl.Init{Flags: flags, Comm: []string{"claim", "ns/" + name}, Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf0)}, Live: [4]uint32{0xffff}, SMs: 8}}}
}

// claimWithProcs makes claim name's directory in dir, its root with flags,
// and a block for each pid, held as a running process's shim holds it; it
// returns the blocks' paths and the functions that end their processes.
func claimWithProcs(t *testing.T, dir, name string, flags uint32, pids ...int) (paths []string, ends []func()) {
	t.Helper()
	cd, err := ctl.ClaimDir(dir, "uid-"+name)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(cd, 0o755)
	in := claimInit(name, flags)
	h, err := ctl.CreateClaimRoot(cd, in)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	for _, pid := range pids {
		p := procBlock(t, cd, in, pid)
		paths, ends = append(paths, p), append(ends, ctltest.HoldLock(t, p))
	}
	return paths, ends
}

// procBlock makes the block of process pid (in its container) in the claim
// directory cd, a copy of the claim's root as its shim makes it.
func procBlock(t *testing.T, cd string, in ctl.Init, pid int) string {
	t.Helper()
	in.PID = pid
	h, err := ctl.Create(cd, in)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	return h.Path
}

// TestToucherPass: each pass starts a touch for each process of an MPS claim
// that it has not seen, none for a claim outside MPS, none again for a
// process it has; a process ended and another started at its path (its
// pid reused in the container) is touched; another user's processes are not,
// and that is said once.
func TestToucherPass(t *testing.T) {
	dir := t.TempDir()
	mpsProcs, ends := claimWithProcs(t, dir, "a", ctl.FlagMPS, 7, 8)
	claimWithProcs(t, dir, "b", 0, 9)
	var touched []string
	var logged bytes.Buffer
	tc := newToucher(func(block string) error { touched = append(touched, block); return nil }, slog.New(slog.NewTextHandler(&logged, nil)))
	pass := func() {
		claims, _, err := ctl.Claims(dir)
		if err != nil {
			t.Fatal(err)
		}
		tc.pass(claims)
	}
	pass()
	slices.Sort(touched)
	if !slices.Equal(touched, mpsProcs) {
		t.Fatalf("first pass touched %q, want the MPS claim's processes %q", touched, mpsProcs)
	}
	pass()
	if len(touched) != 2 {
		t.Errorf("second pass touched again: %q", touched)
	}
	ends[0]() // pid 7 ends, its block swept by the pass; a new pid 7 starts
	pass()
	cd := filepath.Dir(mpsProcs[0])
	again := procBlock(t, cd, claimInit("a", ctl.FlagMPS), 7)
	ctltest.HoldLock(t, again)
	pass()
	if len(touched) != 3 || touched[2] != mpsProcs[0] {
		t.Errorf("a new process at an old block's path: touched %q, want %s a second time", touched, mpsProcs[0])
	}

	tc = newToucher(tc.start, tc.log)
	tc.uid = os.Geteuid() + 1 // the processes are another user's
	touched = nil
	pass()
	pass()
	if len(touched) != 0 || strings.Count(logged.String(), "another user") != 1 {
		t.Errorf("another user's processes: touched %q, log %q; want none, said once", touched, logged.String())
	}
}

// TestDaemonTouchesClaims: the daemon running carve's MPS starts a touch
// for a claim's process under MPS at its pass, once over several passes;
// one without MPS touches nothing.
func TestDaemonTouchesClaims(t *testing.T) {
	for _, withMPS := range []bool{true, false} {
		dir := t.TempDir()
		paths, _ := claimWithProcs(t, dir, "a", ctl.FlagMPS, 3)
		var mu sync.Mutex
		var touched []string
		o := Options{Dir: dir, Touch: func(block string) error {
			mu.Lock()
			defer mu.Unlock()
			touched = append(touched, block)
			return nil
		}}
		if withMPS {
			d, _ := countedMPS(t)
			t.Cleanup(func() { d.Stop() })
			o.MPS = d
		}
		got := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(touched)
		}
		_, stop := start(t, o)
		for deadline := time.Now().Add(10 * time.Second); withMPS && len(got()) == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // passes every 10ms
		stop()
		if withMPS && !slices.Equal(got(), paths) || !withMPS && len(got()) != 0 {
			t.Errorf("MPS %v: touched %q; want %s once with MPS, none without", withMPS, got(), strconv.Quote(paths[0]))
		}
	}
}
