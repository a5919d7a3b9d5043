package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/mps"
)

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure carve against other ways of sharing the GPU",
		Long: `bench runs carve's benchmarks on this GPU and writes each result as JSON
with PNG and SVG plots, in --out (default carve-bench-DATE).`,
	}
	c.AddCommand(newGranularityCmd(), newEnforcementCmd(), newGEMMWorkerCmd(), newCompetitorCmd(), &cobra.Command{
		Use:   "plot RESULT.json",
		Short: "Draw the plots of a saved benchmark result again (no GPU needed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := bench.Load(args[0])
			if err != nil {
				return err
			}
			if err := bench.Plot(r, filepath.Dir(args[0])); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", filepath.Join(filepath.Dir(args[0]), r.Benchmark+".{png,svg}"))
			return nil
		},
	})
	return c
}

func newGranularityCmd() *cobra.Command {
	var n, reps, device int
	var outDir, out string
	var mechanisms []string
	c := &cobra.Command{
		Use:   "granularity",
		Short: "GEMM time at every partition size carve can express (1..N TPCs)",
		Long: `granularity times an n x n float GEMM (carve's own kernel, checked against a
CPU reference first) on every TPC count from 1 to all, each partition placed
GPC-packed, and draws time against SMs, with MiG's documented sizes for
comparison (MiG cannot be measured where it is not enabled).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if len(mechanisms) == 0 {
				return errors.New("--mechanisms is empty")
			}
			for _, m := range mechanisms {
				if m != "carve" && m != "mps" {
					return fmt.Errorf("unknown mechanism %q: want carve or mps", m)
				}
			}
			if reps < 1 {
				return fmt.Errorf("--reps %d: want at least 1", reps)
			}
			t, _, err := loadTopology(device, false)
			if err != nil {
				return err
			}
			g, err := bench.NewGEMM(device, n)
			if err != nil {
				return err
			}
			if e, err := g.Check(128, nil); err != nil || e > 1e-5 {
				return fmt.Errorf("GEMM check against the CPU: relative error %g, %v", e, err)
			}
			r := &bench.Result{Benchmark: "granularity", Device: t.Device, UUID: t.UUID, Driver: t.Driver,
				Date:   time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"n": n, "reps": reps, "placement": "GPC-packed (carve run -n K)"}}
			for _, m := range mechanisms {
				var s bench.Series
				switch m {
				case "carve":
					s, err = bench.GranularityCarve(g, t, reps, progressBar("granularity: carve"))
				case "mps":
					s, err = granularityMPS(n, reps, device, t.SMCount, len(t.TPCs))
				}
				if err != nil {
					return err
				}
				r.Series = append(r.Series, s)
			}
			r.Series = append(r.Series, bench.MIGSeries())
			path, err := saveResult(r, outDir)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TPCS\tSMS\tMEDIAN MS\tMIN MS\tP99 MS\tx ALL TPCS")
			for _, s := range r.Series {
				if !s.Measured {
					continue
				}
				fmt.Fprintf(tw, "%s\n", s.Mechanism)
				all := s.Points[len(s.Points)-1].Stats.P50
				for _, p := range s.Points {
					fmt.Fprintf(tw, "%d\t%d\t%.3f\t%.3f\t%.3f\t%.2f\n", p.TPCs, p.SMs, p.Stats.P50, p.Stats.Min, p.Stats.P99, p.Stats.P50/all)
				}
			}
			tw.Flush()
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and %s\n", path, filepath.Join(filepath.Dir(path), "granularity.{png,svg}"))
			return nil
		},
	}
	c.Flags().IntVar(&n, "n", 2048, "matrix size (a multiple of 64)")
	c.Flags().IntVar(&reps, "reps", 5, "timed runs per partition size, after one warm-up")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringSliceVar(&mechanisms, "mechanisms", []string{"carve", "mps"}, "what to measure: carve (TPC masks), mps (active-thread percentages, one process per size)")
	c.Flags().StringVar(&outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &out)
	return c
}

// granularityMPS measures the MPS series in worker processes under an MPS
// daemon of its own, stopped before returning.
func granularityMPS(n, reps, device, sms, tpcs int) (bench.Series, error) {
	root, err := os.MkdirTemp("", "carve-bench-mps-")
	if err != nil {
		return bench.Series{}, err
	}
	defer os.RemoveAll(root)
	d := mps.Daemon{Root: root}
	if err := d.Start(); err != nil {
		return bench.Series{}, err
	}
	defer d.Stop()
	exe, err := os.Executable()
	if err != nil {
		return bench.Series{}, err
	}
	w := bench.ExecWorker(exe, "bench", "__gemm", fmt.Sprintf("--n=%d", n), fmt.Sprintf("--reps=%d", reps), fmt.Sprintf("--device=%d", device))
	return bench.GranularityMPS(w, d, tpcs, sms, progressBar("granularity: MPS"))
}

// newGEMMWorkerCmd is the GEMM process the MPS granularity series and the
// enforcement victim run.
func newGEMMWorkerCmd() *cobra.Command {
	var n, reps, device int
	c := &cobra.Command{
		Use:    "__gemm",
		Short:  "time the benchmark GEMM and print the times as JSON (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, err := bench.NewGEMM(device, n)
			if err != nil {
				return err
			}
			ms, err := g.Samples(nil, reps)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(ms)
		},
	}
	c.Flags().IntVar(&n, "n", 2048, "matrix size")
	c.Flags().IntVar(&reps, "reps", 5, "timed runs after one warm-up")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}

// saveResult writes r's JSON and plots into dir (default carve-bench-DATE)
// and returns the JSON's path.
func saveResult(r *bench.Result, dir string) (string, error) {
	if dir == "" {
		dir = "carve-bench-" + time.Now().Format("2006-01-02")
	}
	path, err := r.Save(dir)
	if err != nil {
		return "", err
	}
	return path, bench.Plot(r, dir)
}
