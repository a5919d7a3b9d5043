// The processes a benchmark runs: a setup's command prefix and
// environment, a competitor started and stopped, a victim's JSON read back,
// GEMM workers under MPS, and CoRunner, which runs a group of workers'
// kernels together in rounds.

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Setup is one way of sharing the GPU between the victim and a competitor:
// a command prefix and extra environment for each process.
type Setup struct {
	Mechanism          string
	VictimPrefix       []string // e.g. carve run -q -t 0-37 --
	CompetitorPrefix   []string
	VictimEnv, CompEnv []string
}

// Workers starts benchmark processes: carve's own hidden subcommands
// (carve bench __gemm, __competitor, __suite) or another program (PyTorch).
type Workers struct {
	Exe string   // the carve binary
	Env []string // added to every worker's environment (MPS client settings)
}

// command is prefix + argv with w.Env and env added to this process's
// environment, less LD_PRELOAD (a prefix of carve run sets its own). The
// process is killed if carve dies (a bench stopped by a timeout leaves no
// worker on the GPU to spoil what runs next).
func (w Workers) command(ctx context.Context, prefix []string, env []string, argv ...string) *exec.Cmd {
	argv = append(append([]string(nil), prefix...), argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LD_PRELOAD=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, w.Env...), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// StartCompetitor starts a competitor of kind under s and returns once it
// has run its first kernel; stop it with the returned function.
func (w Workers) StartCompetitor(s Setup, kind string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := w.command(ctx, s.CompetitorPrefix, s.CompEnv, w.Exe, "bench", "__competitor", "--kind="+kind)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	stop = func() { cancel(); cmd.Wait() }
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "running" {
			err = fmt.Errorf("competitor said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s competitor under %s: %w", kind, s.Mechanism, err)
		}
		return stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return nil, fmt.Errorf("%s competitor under %s did not start within 2 minutes", kind, s.Mechanism)
	}
}

// Victim runs argv under s and decodes the JSON it prints into out.
func (w Workers) Victim(s Setup, out any, argv ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return runJSON(w.command(ctx, s.VictimPrefix, s.VictimEnv, argv...), out)
}

// Worker runs one GEMM worker process (`carve bench __gemm`) under MPS with
// the given extra environment and returns the times it printed.
type Worker func(ctx context.Context, env []string) ([]float64, error)

// ExecWorker runs argv with env added to this process's environment
// (LD_PRELOAD dropped), and parses its stdout as a JSON array.
func ExecWorker(argv ...string) Worker {
	return func(ctx context.Context, env []string) ([]float64, error) {
		var ms []float64
		return ms, runJSON(Workers{Env: env}.command(ctx, nil, nil, argv...), &ms)
	}
}

// runJSON runs cmd and decodes its stdout as JSON into out.
func runJSON(cmd *exec.Cmd, out any) error {
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s printed %q: %w", cmd.Args[0], b, err)
	}
	return nil
}

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
