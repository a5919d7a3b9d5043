package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
)

func newEnforcementCmd() *cobra.Command {
	var n, samples, device int
	var share float64
	var outDir, out string
	c := &cobra.Command{
		Use:   "enforcement",
		Short: "A GEMM victim's times beside a compute- or memory-heavy competitor, per mechanism",
		Long: `enforcement runs a GEMM victim (samples timed launches) in one share of the GPU
while a competitor runs continuously in the rest: Mandelbrot (compute-heavy) or
random walks over 1 GiB (memory-heavy). Each is a separate process under an MPS
daemon of carve's own. Mechanisms: none (MPS, no limits), MPS active-thread
percentages, and carve (TPC sets, GPC-packed). The reference is the victim's
time alone on the whole GPU divided by the share. Green contexts are not
measured here (they partition inside one process only).`,
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
			t, _, err := loadTopology(device, false)
			if err != nil {
				return err
			}
			shim, err := findShim("")
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			k := int(math.Round(share * float64(len(t.TPCs))))
			vset := partition.Pack(t, k, nil)
			cset := partition.Pack(t, len(t.TPCs)-k, vset)
			pct := int(math.Round(100 * share))
			root, err := os.MkdirTemp("", "carve-bench-mps-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(root)
			d := mps.Daemon{Root: root}
			if err := d.Start(); err != nil {
				return err
			}
			defer d.Stop()
			w := bench.Workers{Exe: exe, Env: d.ClientEnv(mps.DefaultConnections),
				Args: []string{fmt.Sprintf("--n=%d", n), fmt.Sprintf("--reps=%d", samples), fmt.Sprintf("--device=%d", device)}}
			run := func(set partition.Set) []string {
				return []string{exe, "run", "-q", "--shim", shim, "-t", set.String(), "--"}
			}
			setups := []bench.Setup{
				{Mechanism: "none"},
				{Mechanism: fmt.Sprintf("MPS %d%%/%d%%", pct, 100-pct),
					VictimEnv: []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct)},
					CompEnv:   []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", 100-pct)}},
				{Mechanism: fmt.Sprintf("carve %d/%d TPCs", len(vset), len(cset)), VictimPrefix: run(vset), CompetitorPrefix: run(cset)},
			}
			r := &bench.Result{Benchmark: "enforcement", Device: t.Device, UUID: t.UUID, Driver: t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"n": n, "samples": samples, "share": share, "victim_tpcs": vset.String(),
					"competitor_tpcs": cset.String(), "mps_percent": pct}}
			step, total := 0, 1+3*len(setups)
			progress := progressBar("enforcement")
			measure := func(name string, s bench.Setup, comp string) error {
				if comp != "" {
					stop, err := w.StartCompetitor(s, comp)
					if err != nil {
						return err
					}
					defer stop()
				}
				ms, err := w.Victim(s)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				r.Series = append(r.Series, bench.Series{Mechanism: name, Measured: true, Points: []bench.Point{{Stats: bench.Summarize(ms)}}})
				step++
				progress(step, total)
				return nil
			}
			if err := measure("alone, whole GPU", setups[0], ""); err != nil {
				return err
			}
			scaled := r.Series[0].Points[0].Stats.P50 / share
			r.Params["scaled_alone_ms"] = scaled
			for _, s := range setups {
				for _, comp := range []string{"", "compute", "memory"} {
					name := s.Mechanism + ", alone"
					if comp != "" {
						name = s.Mechanism + " + " + comp
					}
					if s.Mechanism == "none" && comp == "" {
						continue // the same as alone, whole GPU
					}
					if err := measure(name, s, comp); err != nil {
						return err
					}
				}
			}
			path, err := saveResult(r, outDir)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "victim on %s of the GPU; reference (alone / %.2f) %.3f ms\n", fmt.Sprint(share), share, scaled)
			fmt.Fprintln(tw, "SETUP\tMIN\tP50\tP99\tMAX\tP99 VS REFERENCE")
			for _, s := range r.Series {
				st := s.Points[0].Stats
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%+.1f%%\n", s.Mechanism, st.Min, st.P50, st.P99, st.Max, 100*(st.P99/scaled-1))
			}
			tw.Flush()
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
			return nil
		},
	}
	c.Flags().IntVar(&n, "n", 2048, "victim GEMM size (a multiple of 64)")
	c.Flags().IntVar(&samples, "samples", 1000, "victim launches timed per setup")
	c.Flags().Float64Var(&share, "share", 0.57, "the victim's share of the GPU (nvtaskset's 57/43 split by default)")
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
			c, err := bench.NewCompetitor(s, kind, 0)
			if err != nil {
				return err
			}
			for i := 0; ; i++ {
				if _, err := c.Step(); err != nil {
					return err
				}
				if i == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "running")
				}
			}
		},
	}
	c.Flags().StringVar(&kind, "kind", "compute", "compute (Mandelbrot) or memory (random walks)")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}
