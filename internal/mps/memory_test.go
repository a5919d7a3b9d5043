// Tests of memory.go: the limit written as MPS takes it and read back, and
// the limit a running process was started with.

package mps

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// TestPinnedMemLimit: the limit is written as MPS takes it, a whole number
// of GiB or (rounded up) MiB, and read back as the smallest a client has.
func TestPinnedMemLimit(t *testing.T) {
	for _, tc := range []struct {
		ordinal int
		bytes   uint64
		want    string
	}{
		{0, 12 << 30, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=12G"},
		{2, 512 << 20, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=2=512M"},
		{0, 1536 << 20, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1536M"},
		{0, 1_000_000_000, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=954M"},
	} {
		got := PinnedMemLimit(tc.ordinal, tc.bytes)
		if got != tc.want {
			t.Errorf("PinnedMemLimit(%d, %d) = %q, want %q", tc.ordinal, tc.bytes, got, tc.want)
		}
		_, v, _ := strings.Cut(got, "=")
		if b, ok, err := ParsePinnedMemLimit(v); err != nil || !ok || b < tc.bytes || b-tc.bytes >= 1<<20 {
			t.Errorf("%q reads back as %d %v %v", v, b, ok, err)
		}
	}
	if got := PinnedMemLimits([]int{0, 1}, 8<<30); got != "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8G,1=8G" {
		t.Errorf("a limit on two GPUs: %q", got)
	}
	for v, want := range map[string]uint64{"0=2G": 2 << 30, "0=1G,1=512MB": 512 << 20, "GPU-72602ec6=3G": 3 << 30, "0=4096m": 4 << 30} {
		if b, ok, err := ParsePinnedMemLimit(v); err != nil || !ok || b != want {
			t.Errorf("%q: %d %v %v, want %d", v, b, ok, err, want)
		}
	}
	if _, ok, err := ParsePinnedMemLimit(""); ok || err != nil {
		t.Errorf("an empty limit: %v %v", ok, err)
	}
	for _, bad := range []string{"0", "0=", "=2G", "0=2", "0=2T", "0=x G", "0=-1G"} {
		if _, _, err := ParsePinnedMemLimit(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// TestStartedLimit: the limit a running process was started with, from
// its environment; none where it has none.
func TestStartedLimit(t *testing.T) {
	for env, want := range map[string]uint64{PinnedMemLimit(0, 3<<30): 3 << 30, "OTHER=1": 0} {
		// the process says it runs, so that its exec is done: until then
		// its /proc environ can read empty
		c := exec.Command("sh", "-c", "echo up; read x")
		c.Env = []string{env}
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		in, err := c.StdinPipe() // open until it is killed: read x waits
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		b, ok, err := StartedLimit(c.Process.Pid)
		c.Process.Kill()
		c.Wait()
		if err != nil || b != want || ok != (want != 0) {
			t.Errorf("started with %s: %d %v %v", env, b, ok, err)
		}
	}
	if _, _, err := StartedLimit(999999999); err == nil {
		t.Error("the limit of a process that does not exist")
	}
}
