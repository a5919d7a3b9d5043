package bench

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
// environment, less LD_PRELOAD (a prefix of carve run sets its own).
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

// TorchMatmul is the PyTorch victim's script, run as python3 -c.
//
//go:embed torch_matmul.py
var TorchMatmul string
