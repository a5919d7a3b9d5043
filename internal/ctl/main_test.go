// The test binary doubles as a process that holds a POSIX read lock on a
// block's first byte, as a tenant's shim holds one on its own block for
// its life (CTL_HOLD names the file); holdLock starts it.

package ctl_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("CTL_HOLD"); path != "" {
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
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdLock starts a process that holds the shim's lock on the block at
// path until the test ends.
func holdLock(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CTL_HOLD="+path)
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
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("holding %s: %q %v", path, line, err)
	}
}
