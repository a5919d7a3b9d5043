// Tests of the shim's test build (shimtest.go, clock.go): the libcarve.so
// make builds has none of its hooks, and a Clock runs the fake driver's
// kernels on virtual time.

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
	"time"
)

// TestMakeBuildHasNoTestHooks: the libcarve.so that make builds has none
// of the test build's virtual clock. make's rule compiles with CFlags and
// no -D; the shim built with CFlags has no symbol of the clock's and no
// name of its variable, where the test build has both (so that the check
// sees them).
func TestMakeBuildHasNoTestHooks(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Log("no make: its rule is not read")
	} else {
		cmd := exec.Command("make", "-n", "-B", "-C", filepath.Join(ShimDir(), ".."), "bin/libcarve.so")
		cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, "CFLAGS=") || strings.HasPrefix(e, "CC=") || strings.HasPrefix(e, "MAKEFLAGS=")
		})
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n bin/libcarve.so: %v", err)
		}
		var flags []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, " -shared ") {
				for _, f := range strings.Fields(line) {
					if strings.HasPrefix(f, "-") && !slices.Contains([]string{"-shared", "-o", "-ldl", "-pthread"}, f) {
						flags = append(flags, f)
					}
				}
			}
		}
		if slices.Sort(flags); !slices.Equal(flags, slices.Sorted(slices.Values(CFlags))) {
			t.Errorf("make builds the shim with %v, shimtest with %v (make's rule: %q)", flags, CFlags, out)
		}
	}
	b := Build(t)
	for _, lib := range []struct {
		path  string
		hooks bool
	}{{b.Shim, false}, {b.TestShim, true}} {
		out, err := exec.Command("nm", lib.path).Output()
		if err != nil {
			t.Fatalf("nm %s: %v", lib.path, err)
		}
		var syms []string
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && (strings.Contains(f[len(f)-1], "vclock") || strings.HasPrefix(f[len(f)-1], "carve_thread_")) {
				syms = append(syms, f[len(f)-1])
			}
		}
		data, err := os.ReadFile(lib.path)
		if err != nil {
			t.Fatal(err)
		}
		env := bytes.Contains(data, []byte(clockEnv))
		if lib.hooks != (len(syms) > 0) || lib.hooks != env {
			t.Errorf("%s: the clock's symbols %v, its variable %s named: %v; want both %v", lib.path, syms, clockEnv, env, lib.hooks)
		}
	}
}

// driverOn starts the driver program on the fake driver, without the
// shim, on the clock c, and returns how to ask it something.
func driverOn(t *testing.T, c *Clock) func(string) (string, time.Duration) {
	b := Build(t)
	cmd := exec.Command(b.Driver)
	cmd.Env = []string{"CARVE_LIBCUDA=" + b.Fake, c.Env()}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("driver: %q %v", line, err)
	}
	pid := cmd.Process.Pid
	c.Park(pid)
	return func(s string) (string, time.Duration) {
		t.Helper()
		line, d, err := c.Ask(pid, in, out, s, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return line, d
	}
}

// TestClockRunsTheFake: on a Clock, the fake driver's kernels take their
// time on it, a synchronization waits for it to pass, and launches from
// four threads at once all count; nothing moves while no one waits.
func TestClockRunsTheFake(t *testing.T) {
	c := NewClock(t, t.TempDir(), 100*time.Microsecond)
	ask := driverOn(t, c)
	ask("dur 5000")
	start := c.Now()
	for range 3 {
		if got, d := ask("klaunch kernel"); !strings.HasPrefix(got, "mask ") || d != 0 {
			t.Fatalf("launch: %q after %v", got, d)
		}
	}
	if got, d := ask("sync"); got != "rc 0" || d != 15*time.Millisecond {
		t.Errorf("sync after 3 kernels of 5 ms: %q after %v, want 15 ms", got, d)
	}
	ask("dur 200")
	if got, d := ask("threads 100"); !strings.HasPrefix(got, "threads ") || d != 0 {
		t.Errorf("4 threads launching: %q after %v", got, d)
	}
	if _, d := ask("sync"); d != 80*time.Millisecond {
		t.Errorf("sync after 400 kernels of 200 us: %v, want 80 ms", d)
	}
	if c.Now()-start != 95*time.Millisecond {
		t.Errorf("the clock moved %v, want 95 ms", c.Now()-start)
	}
	c.RunFor(time.Millisecond)
	if c.Now()-start != 96*time.Millisecond {
		t.Errorf("RunFor(1 ms) moved the clock to %v, want 96 ms", c.Now()-start)
	}
}
