// A process that holds a POSIX read lock on a block's first byte, as a
// tenant's shim holds one on its own block for its life, so that carve
// counts the block's tenant as running: the test binary itself, started by
// HoldLock, acts as it in its TestMain (ServeHold).

package ctltest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

const holdEnv = "CARVE_TEST_HOLD" // the path of the block the process holds

// ServeHold is for a test binary's TestMain, before m.Run: in a process
// HoldLock started, it holds the lock until its input closes, then exits.
func ServeHold() {
	path := os.Getenv(holdEnv)
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err == nil {
		err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_RDLCK, Len: 1})
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin) // until the test closes it
	runtime.KeepAlive(f)          // a finalizer closing f at a GC would let the lock go
	os.Exit(0)
}

// HoldLock starts the test binary as a process that holds the lock on the
// block at path until the test ends, or until the function it returns is
// called (which returns once the process has exited); its TestMain must
// call ServeHold.
func HoldLock(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	in, line := StartLine(t, cmd)
	if line != "held" {
		t.Fatalf("holding %s: %q", path, line)
	}
	return func() { in.Close(); cmd.Wait() }
}

// StartLine starts cmd (a helper process the test binary runs as) with a
// pipe to its input, which the test's end closes before it kills and
// waits for it, and returns that pipe and its first line, trimmed.
func StartLine(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, string) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s said nothing: %v", cmd.Args[0], err)
	}
	return in, strings.TrimSpace(line)
}
