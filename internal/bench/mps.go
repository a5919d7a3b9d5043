package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/mps"
)

// MPSPercentages are the active-thread percentages that come closest to each
// TPC count 1..tpcs: MPS takes whole percents, not sets of TPCs.
func MPSPercentages(tpcs int) []int {
	out := make([]int, tpcs)
	for k := 1; k <= tpcs; k++ {
		out[k-1] = int(math.Ceil(100 * float64(k) / float64(tpcs)))
	}
	return out
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

// GranularityMPS times the GEMM in a worker process under MPS at each
// active-thread percentage that MPSPercentages gives, one process each.
// d must be running.
func GranularityMPS(w Worker, d mps.Daemon, tpcs, sms int, progress func(done, total int)) (Series, error) {
	s := Series{Mechanism: "MPS active-thread %", Measured: true,
		Note: "one client process per size with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; SMs = percentage x SM count (MPS gives no set)"}
	for i, p := range MPSPercentages(tpcs) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		env := append(d.ClientEnv(mps.DefaultConnections), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(p))
		ms, err := w(ctx, env)
		cancel()
		if err != nil {
			return s, fmt.Errorf("MPS at %d%%: %w", p, err)
		}
		s.Points = append(s.Points, Point{TPCs: i + 1, SMs: int(math.Round(float64(p) * float64(sms) / 100)), Stats: Summarize(ms)})
		progress(i+1, tpcs)
	}
	return s, nil
}
