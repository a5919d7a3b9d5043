package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// CoRunner is a group of worker processes, each holding one kernel ready
// in its own partition, that run their kernels together in rounds: every
// round starts them all at once (as the latency model assumes) and waits
// for each to report its time.
type CoRunner struct {
	cmds   []*exec.Cmd
	ins    []io.WriteCloser
	outs   []*bufio.Reader
	cancel context.CancelFunc
}

// StartCoRun starts one worker per setup (argv under the setup's prefix
// and environment) and waits until each says it is ready.
func (w Workers) StartCoRun(setups []Setup, argvs [][]string) (*CoRunner, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &CoRunner{cancel: cancel}
	for i, s := range setups {
		cmd := w.command(ctx, s.VictimPrefix, s.VictimEnv, argvs[i]...)
		cmd.WaitDelay = 5 * time.Second
		in, err := cmd.StdinPipe()
		if err != nil {
			c.Stop()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			c.Stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			c.Stop()
			return nil, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
		}
		c.cmds, c.ins, c.outs = append(c.cmds, cmd), append(c.ins, in), append(c.outs, bufio.NewReader(out))
	}
	for i := range c.cmds {
		if line, err := c.read(i, 2*time.Minute); err != nil || line != "ready" {
			c.Stop()
			return nil, fmt.Errorf("co-run worker %d said %q: %v", i, line, err)
		}
	}
	return c, nil
}

func (c *CoRunner) read(i int, limit time.Duration) (string, error) {
	got := make(chan string, 1)
	errs := make(chan error, 1)
	go func() {
		line, err := c.outs[i].ReadString('\n')
		if err != nil {
			errs <- err
			return
		}
		got <- strings.TrimSpace(line)
	}()
	select {
	case s := <-got:
		return s, nil
	case err := <-errs:
		return "", err
	case <-time.After(limit):
		return "", fmt.Errorf("no answer within %v", limit)
	}
}

// Round starts every worker's kernel and returns each one's time (ms).
func (c *CoRunner) Round() ([]float64, error) {
	for i, in := range c.ins {
		if _, err := io.WriteString(in, "go\n"); err != nil {
			return nil, fmt.Errorf("co-run worker %d: %w", i, err)
		}
	}
	ms := make([]float64, len(c.ins))
	for i := range c.ins {
		line, err := c.read(i, time.Minute)
		if err != nil {
			return nil, fmt.Errorf("co-run worker %d: %w", i, err)
		}
		if ms[i], err = strconv.ParseFloat(line, 64); err != nil {
			return nil, fmt.Errorf("co-run worker %d said %q", i, line)
		}
	}
	return ms, nil
}

// Stop ends the workers.
func (c *CoRunner) Stop() {
	for _, in := range c.ins {
		in.Close() // a worker ends at the end of its input
	}
	done := make(chan struct{})
	go func() {
		for _, cmd := range c.cmds {
			cmd.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cancel()
		<-done
	}
	c.cancel()
}

// ServeCoRun is the worker's side: say ready, then run w once for every
// line read from in and print its time, until in ends.
func ServeCoRun(w Workload, in io.Reader, out io.Writer) error {
	if _, err := w.Iterate(); err != nil { // warm-up
		return err
	}
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		ms, err := w.Iterate()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%.6f\n", ms)
	}
	return sc.Err()
}
