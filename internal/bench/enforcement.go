package bench

import (
	"bufio"
	"context"
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

// Workers starts carve's own benchmark subcommands (carve bench __gemm,
// carve bench __competitor) as separate processes.
type Workers struct {
	Exe  string   // the carve binary
	Env  []string // added to every worker's environment (MPS client settings)
	Args []string // passed to the victim (e.g. --n, --reps)
}

func (w Workers) command(ctx context.Context, prefix []string, env []string, args ...string) *exec.Cmd {
	argv := append(append(append([]string(nil), prefix...), w.Exe), args...)
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
	cmd := w.command(ctx, s.CompetitorPrefix, s.CompEnv, "bench", "__competitor", "--kind="+kind)
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

// Victim runs the victim under s and returns its samples (ms).
func (w Workers) Victim(s Setup) ([]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return parseTimes(w.command(ctx, s.VictimPrefix, s.VictimEnv, append([]string{"bench", "__gemm"}, w.Args...)...))
}
