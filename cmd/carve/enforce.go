package main

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
)

func newEnforcementCmd() *cobra.Command {
	var n, samples, device int
	var share float64
	var outDir, out, python string
	var victims []string
	c := &cobra.Command{
		Use:   "enforcement",
		Short: "A GEMM victim's times beside a compute- or memory-heavy competitor, per mechanism",
		Long: `enforcement runs a GEMM victim (samples timed launches) in one share of the GPU
while a competitor runs continuously in the rest: Mandelbrot (compute-heavy) or
random walks over 1 GiB (memory-heavy). Victims: sgemm (carve's own kernel) and
torch (torch.matmul in a PyTorch process, needs python3 with torch). Each is a
separate process under an MPS daemon of carve's own. Mechanisms: none (MPS, no
limits), MPS active-thread percentages, carve (TPC sets, GPC-packed) and, for
sgemm, green contexts (victim and competitor as two threads of this process:
the API cannot partition separate processes). The reference is the victim's
time alone on the whole GPU divided by the share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if share <= 0 || share >= 1 {
				return fmt.Errorf("--share %g: want a fraction between 0 and 1", share)
			}
			if samples < 1 {
				return errors.New("--samples: want at least 1")
			}
			for _, v := range victims {
				if v != "sgemm" && v != "torch" {
					return fmt.Errorf("unknown victim %q: want sgemm or torch", v)
				}
			}
			if slices.Contains(victims, "torch") {
				if err := exec.Command(python, "-c", "import torch; assert torch.cuda.is_available()").Run(); err != nil {
					return fmt.Errorf("victim torch needs %s with a CUDA build of PyTorch (%v); leave it out with --victims sgemm", python, err)
				}
			}
			e, err := newBenchEnv(device)
			if err != nil {
				return err
			}
			defer e.Close()
			t, exe := e.t, e.exe
			vset, cset := e.split(share)
			pct := int(math.Round(100 * share))
			w := bench.Workers{Exe: exe, Env: e.mpsEnv()}
			run := e.carveRun
			setups := []bench.Setup{
				{Mechanism: "none"},
				{Mechanism: fmt.Sprintf("MPS %d%%/%d%%", pct, 100-pct),
					VictimEnv: []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct)},
					CompEnv:   []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", 100-pct)}},
				{Mechanism: fmt.Sprintf("carve %d/%d TPCs", len(vset), len(cset)), VictimPrefix: run(vset), CompetitorPrefix: run(cset)},
			}
			argv := map[string][]string{
				"sgemm": {exe, "bench", "__gemm", fmt.Sprintf("--n=%d", n), fmt.Sprintf("--reps=%d", samples), fmt.Sprintf("--device=%d", device)},
				"torch": {python, "-c", bench.TorchMatmul, fmt.Sprintf("--n=%d", n), fmt.Sprintf("--reps=%d", samples)},
			}
			victimName := map[string]string{"sgemm": "sgemm", "torch": "torch.matmul"}
			refs := map[string]any{}
			r := &bench.Result{Benchmark: "enforcement", Device: t.Device, UUID: t.UUID, Driver: t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"n": n, "samples": samples, "share": share, "victim_tpcs": vset.String(),
					"competitor_tpcs": cset.String(), "mps_percent": pct, "scaled_alone_ms": refs}}
			comps := []string{"", "compute", "memory"}
			step, total := 0, 0
			for _, v := range victims {
				total += 1 + len(setups)*len(comps) - 1
				if v == "sgemm" {
					total += len(comps)
				}
			}
			progress := progressBar("enforcement")
			add := func(victim, name string, ms []float64) {
				s := bench.Series{Mechanism: name, Victim: victim, Measured: true, Points: []bench.Point{{Stats: bench.Summarize(ms)}}}
				if strings.HasPrefix(name, "green") {
					s.Note = bench.GreenNote
				}
				r.Series = append(r.Series, s)
				step++
				progress(step, total)
			}
			measure := func(v, name string, s bench.Setup, comp string) error {
				if comp != "" {
					stop, err := w.StartCompetitor(s, comp)
					if err != nil {
						return err
					}
					defer stop()
				}
				var ms []float64
				if err := w.Victim(s, &ms, argv[v]...); err != nil {
					return fmt.Errorf("%s victim, %s: %w", v, name, err)
				}
				add(victimName[v], name, ms)
				return nil
			}
			label := func(mech, comp string) string {
				if comp == "" {
					return mech + ", alone"
				}
				return mech + " + " + comp
			}
			for _, v := range victims {
				if err := measure(v, "alone, whole GPU", setups[0], ""); err != nil {
					return err
				}
				refs[victimName[v]] = r.Series[len(r.Series)-1].Points[0].Stats.P50 / share
				for _, s := range setups {
					for _, comp := range comps {
						if s.Mechanism == "none" && comp == "" {
							continue // the same as alone, whole GPU
						}
						if err := measure(v, label(s.Mechanism, comp), s, comp); err != nil {
							return err
						}
					}
				}
			}
			// Green contexts last: this process then holds a context of its own,
			// which the MPS clients above never had to share the GPU with.
			if slices.Contains(victims, "sgemm") {
				groups, rest, err := bench.GreenGroups(device)
				if err != nil {
					return fmt.Errorf("green contexts: %w", err)
				}
				a, b := bench.GreenShares(groups, rest, share)
				mech := fmt.Sprintf("green %d/%d SMs", bench.SMsOf(a), bench.SMsOf(b))
				r.Params["green_sms"] = []int{bench.SMsOf(a), bench.SMsOf(b)}
				for _, comp := range comps {
					var ms []float64
					err := bench.GreenPair(device, a, b, comp, func(s *bench.Session) error {
						g, err := bench.NewGEMM(s, n)
						if err != nil {
							return err
						}
						if e, err := g.Check(128, nil); err != nil || e > 1e-5 {
							return fmt.Errorf("GEMM check against the CPU: relative error %g, %v", e, err)
						}
						ms, err = g.Samples(nil, samples)
						return err
					})
					if err != nil {
						return fmt.Errorf("%s: %w", label(mech, comp), err)
					}
					add(victimName["sgemm"], label(mech, comp), ms)
				}
			}
			return finish(cmd, r, outDir, out)
		},
	}
	c.Flags().IntVar(&n, "n", 2048, "victim GEMM size (a multiple of 64)")
	c.Flags().IntVar(&samples, "samples", 1000, "victim launches timed per setup")
	c.Flags().Float64Var(&share, "share", 0.57, "the victim's share of the GPU (nvtaskset's 57/43 split by default)")
	c.Flags().StringSliceVar(&victims, "victims", []string{"sgemm", "torch"}, "victims to measure: sgemm (carve's kernel), torch (torch.matmul in PyTorch)")
	c.Flags().StringVar(&python, "python", "python3", "the Python with PyTorch, for the torch victim")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &out)
	return c
}

// newCompetitorCmd is the competitor process enforcement starts.
func newCompetitorCmd() *cobra.Command {
	var kind string
	var device int
	c := &cobra.Command{
		Use: "__competitor", Hidden: true, Args: cobra.NoArgs,
		Short: "run a competitor kernel until killed; say running after the first (internal)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := bench.Open(device)
			if err != nil {
				return err
			}
			c, err := bench.NewWorkload(s, kind)
			if err != nil {
				return err
			}
			for i := 0; ; i++ {
				if _, err := c.Iterate(); err != nil {
					return err
				}
				if i == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "running")
				}
			}
		},
	}
	c.Flags().StringVar(&kind, "kind", "compute", "compute (Mandelbrot), memory (random walks) or an app of the isolation suite")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}
