// Starting carve mps touch in the background for a tenant (StartTouch).

package mps

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// StartTouch starts 'carve mps touch --after TENANT' (carve, the binary's
// path) in a session of its own, its output discarded, with env (a
// tenant's, whose GPUs it sees), and returns at once: it waits for the
// tenant's first kernel, connects to MPS after it and exits (README,
// "MPS, and what it brings with it"). A goroutine waits for it, for a
// caller that lives on (carve daemon); one that execs a program (carve
// run) starts 'carve mps touch --background', which calls this and exits,
// so that the program finds no child it did not make.
func StartTouch(carve, tenant string, env []string) error {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	c := exec.Command(carve, "mps", "touch", "--after", tenant)
	c.Env, c.Stdin, c.Stdout, c.Stderr = env, null, null, null
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return fmt.Errorf("starting carve mps touch: %w", err)
	}
	go c.Wait()
	return nil
}
