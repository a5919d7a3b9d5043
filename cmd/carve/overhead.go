package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/cuda"
)

// The quantities the overhead benchmark reports, as point labels.
const (
	labelLatency = "launch latency (launch call to kernel start)"
	labelHost    = "host time in the launch call"
	labelStartup = "startup (exec to first kernel start)"
)

func newOverheadCmd() *cobra.Command {
	var launches, rounds, starts, device, cpu int
	var share float64
	var outDir, out string
	c := &cobra.Command{
		Use:   "overhead",
		Short: "Launch latency, host cost per launch and startup time, with and without carve",
		Long: `overhead measures, in worker processes, for each mechanism (none; carve; MPS;
MPS with an active-thread percentage; carve under MPS; a green context):

  launch latency  from just before cuLaunchKernel to the kernel's first
                  instruction, read from the GPU's %globaltimer and related
                  to the host clock by a kernel that writes the timer into
                  mapped host memory (so latencies are late by at most the
                  time such a write takes to arrive, about a microsecond)
  host cost       the time the launch call takes on the host
  startup         from just before exec to the first kernel's start

Partitions take --share of the GPU (nvtaskset's 57%). Launch workers run in
--rounds rounds that alternate the mechanisms, each pinned to --cpu.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if launches < 1 || rounds < 1 || starts < 1 {
				return errors.New("--launches, --rounds and --starts: want at least 1")
			}
			if share <= 0 || share >= 1 {
				return fmt.Errorf("--share %g: want a fraction between 0 and 1", share)
			}
			if cpu < 0 || cpu >= runtime.NumCPU() {
				return fmt.Errorf("--cpu %d: this machine has CPUs 0-%d", cpu, runtime.NumCPU()-1)
			}
			e, err := newBenchEnv(device)
			if err != nil {
				return err
			}
			defer e.Close()
			set, _ := e.split(share)
			pct := fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%.0f", 100*share)
			green := fmt.Sprintf("--green-share=%g", share)
			type setup struct {
				bench.Setup
				args []string
			}
			setups := []setup{
				{Setup: bench.Setup{Mechanism: "none"}},
				{Setup: bench.Setup{Mechanism: fmt.Sprintf("carve %d TPCs", len(set)), VictimPrefix: e.carveRun(set)}},
				{Setup: bench.Setup{Mechanism: "MPS", VictimEnv: e.mpsEnv()}},
				{Setup: bench.Setup{Mechanism: fmt.Sprintf("MPS %.0f%%", 100*share), VictimEnv: e.mpsEnv(pct)}},
				{Setup: bench.Setup{Mechanism: fmt.Sprintf("carve %d TPCs + MPS", len(set)), VictimPrefix: e.carveRun(set), VictimEnv: e.mpsEnv()}},
				{Setup: bench.Setup{Mechanism: "green context"}, args: []string{green}},
			}
			w := bench.Workers{Exe: e.exe}
			dev := fmt.Sprintf("--device=%d", device)
			progress := progressBar("overhead")
			step, total := 0, len(setups)*(rounds+1+starts)
			lat := make([][]float64, len(setups))
			host := make([][]float64, len(setups))
			boot := make([][]float64, len(setups))
			for range rounds {
				for i, s := range setups {
					var ls bench.LaunchSamples
					argv := append([]string{e.exe, "bench", "__launch", fmt.Sprintf("--n=%d", launches), fmt.Sprintf("--cpu=%d", cpu), dev}, s.args...)
					if err := w.Victim(s.Setup, &ls, argv...); err != nil {
						return fmt.Errorf("launches, %s: %w", s.Mechanism, err)
					}
					for j := range ls.LatencyNS {
						lat[i] = append(lat[i], ls.LatencyNS[j]/1e3)
						host[i] = append(host[i], ls.HostNS[j]/1e3)
					}
					step++
					progress(step, total)
				}
			}
			first := func(s setup) (float64, error) {
				var f struct {
					NS int64 `json:"first_kernel_ns"`
				}
				argv := append([]string{e.exe, "bench", "__first", dev}, s.args...)
				t0 := time.Now().UnixNano()
				if err := w.Victim(s.Setup, &f, argv...); err != nil {
					return 0, fmt.Errorf("startup, %s: %w", s.Mechanism, err)
				}
				return float64(f.NS-t0) / 1e6, nil
			}
			for _, s := range setups { // once each first: the MPS server starts, caches fill
				if _, err := first(s); err != nil {
					return err
				}
				step++
				progress(step, total)
			}
			for range starts {
				for i, s := range setups {
					ms, err := first(s)
					if err != nil {
						return err
					}
					boot[i] = append(boot[i], ms)
					step++
					progress(step, total)
				}
			}
			r := &bench.Result{Benchmark: "overhead", Device: e.t.Device, UUID: e.t.UUID, Driver: e.t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"launches": launches, "rounds": rounds, "starts": starts, "share": share,
					"carve_tpcs": set.String(), "cpu": cpu, "mps_connections": e.mpsEnv()}}
			for i, s := range setups {
				r.Series = append(r.Series, bench.Series{Mechanism: s.Mechanism, Measured: true, Points: []bench.Point{
					{Label: labelLatency, Unit: "us", Stats: bench.Summarize(lat[i])},
					{Label: labelHost, Unit: "us", Stats: bench.Summarize(host[i])},
					{Label: labelStartup, Stats: bench.Summarize(boot[i])},
				}})
			}
			return finish(cmd, r, outDir, out)
		},
	}
	c.Flags().IntVar(&launches, "launches", 1000, "launches timed per worker process")
	c.Flags().IntVar(&rounds, "rounds", 5, "launch worker processes per mechanism, alternating")
	c.Flags().IntVar(&starts, "starts", 50, "startups timed per mechanism, alternating")
	c.Flags().IntVar(&cpu, "cpu", runtime.NumCPU()-1, "CPU the launch workers are pinned to")
	c.Flags().Float64Var(&share, "share", 0.57, "the partitions' share of the GPU")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &out)
	return c
}

// openStamp opens the stamp kernels in device's primary context, or in a
// green context of about greenShare of its SMs when greenShare > 0.
func openStamp(device int, greenShare float64) (*bench.Session, error) {
	if greenShare > 0 {
		groups, rest, err := bench.GreenGroups(device)
		if err != nil {
			return nil, err
		}
		a, _ := bench.GreenShares(groups, rest, greenShare)
		s, _, err := bench.OpenGreen(device, "stamp", a...)
		return s, err
	}
	_, ctx, err := cuda.OpenPrimary(device)
	if err != nil {
		return nil, err
	}
	return bench.OpenIn(ctx, "stamp")
}

// newLaunchWorkerCmd measures launches in one process for overhead.
func newLaunchWorkerCmd() *cobra.Command {
	var n, cpu, device int
	var greenShare float64
	c := &cobra.Command{
		Use: "__launch", Hidden: true, Args: cobra.NoArgs,
		Short: "time launches and print them as JSON (internal)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			runtime.LockOSThread()
			if cpu >= 0 {
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					return fmt.Errorf("pinning to CPU %d: %w", cpu, err)
				}
			}
			s, err := openStamp(device, greenShare)
			if err != nil {
				return err
			}
			ls, err := bench.MeasureLaunches(s, n)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(ls)
		},
	}
	c.Flags().IntVar(&n, "n", 1000, "launches")
	c.Flags().IntVar(&cpu, "cpu", -1, "CPU to pin the launching thread to (-1: none)")
	c.Flags().Float64Var(&greenShare, "green-share", 0, "launch in a green context of this share of the SMs")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}

// newFirstWorkerCmd is the minimal program whose startup overhead times.
func newFirstWorkerCmd() *cobra.Command {
	var device int
	var greenShare float64
	c := &cobra.Command{
		Use: "__first", Hidden: true, Args: cobra.NoArgs,
		Short: "launch one kernel and print when it started (internal)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := openStamp(device, greenShare)
			if err != nil {
				return err
			}
			st, err := bench.NewStamper(s, 1)
			if err != nil {
				return err
			}
			ns, err := st.FirstKernel()
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]int64{"first_kernel_ns": ns})
		},
	}
	c.Flags().Float64Var(&greenShare, "green-share", 0, "launch in a green context of this share of the SMs")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}
