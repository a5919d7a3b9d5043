package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure carve against other ways of sharing the GPU",
		Long: `bench runs carve's benchmarks on this GPU and writes each result as JSON
with PNG and SVG plots, in --out (default carve-bench-DATE).`,
	}
	c.AddCommand(newOverheadCmd(), newEnforcementCmd(), newGranularityCmd(), newIsolationCmd(), newPredictBenchCmd(), newFitCmd(), newColourCmd(), newReadersCmd(), newReportCmd(),
		newGEMMWorkerCmd(), newCompetitorCmd(), newLaunchWorkerCmd(), newFirstWorkerCmd(), newSuiteWorkerCmd(), newKernelWorkerCmd(), newCoRunWorkerCmd())
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
CPU reference first) at every partition size each mechanism can express:
carve on every TPC count from 1 to all, each partition placed GPC-packed;
MPS at every active-thread percentage (one client process each); green
contexts at every multiple of the driver's SM group. It draws time against
SMs, with MiG's documented sizes for comparison (MiG cannot be measured
where it is not enabled).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if len(mechanisms) == 0 {
				return errors.New("--mechanisms is empty")
			}
			for _, m := range mechanisms {
				if m != "carve" && m != "mps" && m != "green" {
					return fmt.Errorf("unknown mechanism %q: want carve, mps or green", m)
				}
			}
			if reps < 1 {
				return fmt.Errorf("--reps %d: want at least 1", reps)
			}
			t, _, err := loadTopology(device, false)
			if err != nil {
				return err
			}
			sess, err := bench.Open(device)
			if err != nil {
				return err
			}
			g, err := bench.NewGEMM(sess, n)
			if err != nil {
				return err
			}
			if e, err := g.Check(128, nil); err != nil || e > 1e-5 {
				return fmt.Errorf("GEMM check against the CPU: relative error %g, %v", e, err)
			}
			r := &bench.Result{Benchmark: "granularity", Device: t.Device, UUID: t.UUID, Driver: t.Driver,
				Date:   time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"n": n, "reps": reps, "placement": "GPC-packed (carve run -n K)"}}
			// Green contexts first: the driver refuses them in a process where a
			// launch callback is subscribed, as carve's series subscribes one.
			if i := slices.Index(mechanisms, "green"); i > 0 {
				mechanisms = append([]string{"green"}, slices.Delete(slices.Clone(mechanisms), i, i+1)...)
			}
			for _, m := range mechanisms {
				var s bench.Series
				switch m {
				case "carve":
					s, err = bench.GranularityCarve(g, t, reps, progressBar("granularity: carve"))
				case "mps":
					s, err = granularityMPS(n, reps, device, t.SMCount, len(t.TPCs))
				case "green":
					s, err = bench.GranularityGreen(device, n, reps, progressBar("granularity: green contexts"))
				}
				if err != nil {
					return err
				}
				r.Series = append(r.Series, s)
			}
			r.Series = append(r.Series, bench.MIGSeries())
			return finish(cmd, r, outDir, out)
		},
	}
	c.Flags().IntVar(&n, "n", 2048, "matrix size (a multiple of 64)")
	c.Flags().IntVar(&reps, "reps", 5, "timed runs per partition size, after one warm-up")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringSliceVar(&mechanisms, "mechanisms", []string{"carve", "mps", "green"},
		"what to measure: carve (TPC masks), mps (active-thread percentages, one process per size), green (green contexts, in this process)")
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
			s, err := bench.Open(device)
			if err != nil {
				return err
			}
			g, err := bench.NewGEMM(s, n)
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

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "report RESULT.json",
		Aliases: []string{"plot"},
		Short:   "Print a saved benchmark result's table and draw its plots again (no GPU needed)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := bench.Load(args[0])
			if err != nil {
				return err
			}
			if err := bench.Plot(r, filepath.Dir(args[0])); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", filepath.Join(filepath.Dir(args[0]), r.Benchmark+".{png,svg}"))
			return bench.WriteTable(cmd.OutOrStdout(), r)
		},
	}
}

// finish saves r with its plots, then prints it as JSON (-o json) or as
// its table.
func finish(cmd *cobra.Command, r *bench.Result, dir, out string) error {
	path, err := saveResult(r, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and its plots\n", path)
	if out == "json" {
		return writeJSON(cmd.OutOrStdout(), r)
	}
	return bench.WriteTable(cmd.OutOrStdout(), r)
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

// benchEnv is what the benchmarks of separate processes share: the GPU's
// topology, this carve binary and its shim, and an MPS daemon of their own
// in a temporary directory (Close stops it).
type benchEnv struct {
	t         *topo.Topology
	exe, shim string
	d         mps.Daemon
}

func newBenchEnv(device int) (*benchEnv, error) {
	t, _, err := loadTopology(device, false)
	if err != nil {
		return nil, err
	}
	shim, err := findShim("")
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "carve-bench-mps-")
	if err != nil {
		return nil, err
	}
	e := &benchEnv{t: t, exe: exe, shim: shim, d: mps.Daemon{Root: root}}
	if err := e.d.Start(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return e, nil
}

func (e *benchEnv) Close() {
	e.d.Stop()
	os.RemoveAll(e.d.Root)
}

// carveRun is the command prefix that runs a program in set through carve.
func (e *benchEnv) carveRun(set partition.Set) []string {
	return []string{e.exe, "run", "-q", "--shim", e.shim, "-t", set.String(), "--"}
}

// mpsEnv is the environment of an MPS client of the daemon, plus extra.
func (e *benchEnv) mpsEnv(extra ...string) []string {
	return append(e.d.ClientEnv(mps.DefaultConnections), extra...)
}

// split packs a share of the TPCs GPC-packed and the rest beside it.
func (e *benchEnv) split(share float64) (a, b partition.Set) {
	k := int(math.Round(share * float64(len(e.t.TPCs))))
	a = partition.Pack(e.t, k, nil)
	return a, partition.Pack(e.t, len(e.t.TPCs)-k, a)
}
