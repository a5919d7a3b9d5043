package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/evaluate"
	"github.com/carve-gpu/carve/internal/model"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/profile"
)

// loadModel reads the profiles in dir and builds the model from them.
func loadModel(dir string) (model.GPU, map[string]*model.Kernel, error) {
	ps, err := profile.LoadDir(dir)
	if err != nil {
		return model.GPU{}, nil, err
	}
	return model.FromProfiles(ps)
}

// loadCalibrated is loadModel with carve's shared bandwidth from a
// calibration file written by carve bench fit ("" for none: the most
// bandwidth one kernel reached stands in, and a note says so).
func loadCalibrated(cmd *cobra.Command, dir, calibration string) (model.GPU, map[string]*model.Kernel, error) {
	g, ks, err := loadModel(dir)
	if err != nil {
		return g, nil, err
	}
	if calibration == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "carve: note: no --calibration: carve's model assumes co-running kernels share "+
			"the most bandwidth one kernel reached, which overstates it (fit it with carve bench fit)")
		return g, ks, nil
	}
	b, err := os.ReadFile(calibration)
	if err != nil {
		return g, nil, err
	}
	var c model.GPU
	if err := json.Unmarshal(b, &c); err != nil {
		return g, nil, fmt.Errorf("%s: %w", calibration, err)
	}
	if c.N != g.N || c.SharedBW <= 0 {
		return g, nil, fmt.Errorf("%s is no calibration for these profiles (%d SMs, shared bandwidth %g)", calibration, c.N, c.SharedBW)
	}
	g.SharedBW = c.SharedBW
	return g, ks, nil
}

// parsePairs parses KERNEL:VALUE arguments.
func parsePairs(args []string, what string) ([]string, []float64, error) {
	names, vals := make([]string, len(args)), make([]float64, len(args))
	for i, a := range args {
		k, v, ok := strings.Cut(a, ":")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || x <= 0 {
			return nil, nil, fmt.Errorf("%q: want KERNEL:%s", a, what)
		}
		names[i], vals[i] = k, x
	}
	return names, vals, nil
}

// smsOf is the SM count of a GPC-packed partition of tpcs TPCs in the
// profiles of kernel k (profiled sizes only).
func smsOf(g model.GPU, k *model.Kernel, tpcs int) (int, error) {
	sms := 2 * tpcs // every TPC of the GPUs carve knows has two SMs
	if _, err := k.C(sms); err != nil {
		return 0, fmt.Errorf("%w: profile it with carve profile --tpcs including %d", err, tpcs)
	}
	return sms, nil
}

func newPredictCmd() *cobra.Command {
	var profiles, which, calibration, out string
	c := &cobra.Command{
		Use:   "predict KERNEL:TPCS [KERNEL:TPCS...]",
		Short: "Predict kernels' latencies alone and co-running in disjoint partitions",
		Long: `predict reads profiles (carve profile) and predicts each kernel's latency on
its partition of TPCS TPCs, alone (the paper's eq. 4) and co-running with the
others in disjoint partitions (eq. 5-16), with the execution windows it used.

--model paper applies the equations as written; carve (the default) scales
the latency measured alone on the partition instead of eq. 4's estimate.`,
		Example: "  carve predict --profiles carve-profiles vadd:22 raytrace:22 mvt:22",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			names, tpcs, err := parsePairs(args, "TPCS")
			if err != nil {
				return err
			}
			var g model.GPU
			var ks map[string]*model.Kernel
			if which == "paper" { // the paper's model has no shared bandwidth to calibrate
				g, ks, err = loadModel(profiles)
			} else {
				g, ks, err = loadCalibrated(cmd, profiles, calibration)
			}
			if err != nil {
				return err
			}
			ps := make([]model.Placement, len(names))
			for i, n := range names {
				k, ok := ks[n]
				if !ok {
					return fmt.Errorf("no profile of %s in %s", n, profiles)
				}
				if tpcs[i] != float64(int(tpcs[i])) {
					return fmt.Errorf("%s: a whole number of TPCs, please", args[i])
				}
				sms, err := smsOf(g, k, int(tpcs[i]))
				if err != nil {
					return err
				}
				ps[i] = model.Placement{Kernel: k, SMs: sms}
			}
			if which == "carve" {
				pred, err := g.Carve(ks)(ps)
				if err != nil {
					return err
				}
				if out == "json" {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"gpu": g, "placements": args, "co_run_ms": pred})
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "carve's model, sharing %.0f GB/s of DRAM bandwidth\n", g.Shared())
				fmt.Fprintln(tw, "KERNEL\tTPCS\tALONE MS (PROFILED)\tDRAM GB/S ALONE\tPREDICTED CO-RUN MS\tSLOWDOWN")
				for i, p := range pred {
					alone, _ := ps[i].Kernel.C(ps[i].SMs)
					bw, _ := ps[i].Kernel.BWIsolated(ps[i].SMs)
					fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.0f\t%.3f\t%.2fx\n", names[i], ps[i].SMs/2, alone, bw, p, p/alone)
				}
				return tw.Flush()
			}
			if which != "paper" {
				return fmt.Errorf("unknown model %q: want paper or carve", which)
			}
			pred, ws, err := g.Predict(ps)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"gpu": g, "placements": args, "predictions": pred, "windows": ws})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "the paper's model as written")
			fmt.Fprintln(tw, "KERNEL\tTPCS\tMEASURED ALONE MS\tPREDICTED ALONE MS (EQ. 4)\tPREDICTED CO-RUN MS (EQ. 8)\tSLOWDOWN")
			for i, p := range pred {
				alone, _ := ps[i].Kernel.C(ps[i].SMs)
				fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.2fx\n", names[i], ps[i].SMs/2, alone, p.Alone, p.CoRun, p.CoRun/p.Alone)
			}
			fmt.Fprintln(tw, "\nWINDOW MS\tRUNNING\tBANDWIDTH GB/S\tI(w)")
			for _, w := range ws {
				var run []string
				for _, i := range w.Running {
					run = append(run, names[i])
				}
				fmt.Fprintf(tw, "%.3f-%.3f\t%s\t%.0f\t%.2f\n", w.Start, w.End, strings.Join(run, ","), w.BW, w.I)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile")
	c.Flags().StringVar(&which, "model", "carve", "carve, or paper (the equations as written, with their windows)")
	c.Flags().StringVar(&calibration, "calibration", "", "calibration.json from carve bench fit (carve's model)")
	addOutputFlag(c, &out)
	return c
}

func newPlanCmd() *cobra.Command {
	var profiles, calibration, out string
	c := &cobra.Command{
		Use:   "plan KERNEL:DEADLINE_MS [KERNEL:DEADLINE_MS...]",
		Short: "Find the smallest partitions on which co-running kernels meet their deadlines",
		Long: `plan gives each kernel the fewest profiled TPCs on which its predicted co-run
latency (carve's model) meets its deadline, growing the partition of whichever
kernel misses until all meet them, or says that no placement does.`,
		Example: "  carve plan --profiles carve-profiles raytrace:3 vadd:1.5",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			names, deadlines, err := parsePairs(args, "DEADLINE_MS")
			if err != nil {
				return err
			}
			g, ks, err := loadCalibrated(cmd, profiles, calibration)
			if err != nil {
				return err
			}
			kernels := make([]*model.Kernel, len(names))
			for i, n := range names {
				if kernels[i] = ks[n]; kernels[i] == nil {
					return fmt.Errorf("no profile of %s in %s", n, profiles)
				}
			}
			sms, pred, err := model.Plan(g, kernels, deadlines, g.Carve(ks))
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"kernels": names, "deadlines_ms": deadlines, "sms": sms, "predictions": pred})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KERNEL\tTPCS\tDEADLINE MS\tPREDICTED CO-RUN MS")
			total := 0
			for i := range names {
				fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\n", names[i], sms[i]/2, deadlines[i], pred[i])
				total += sms[i] / 2
			}
			fmt.Fprintf(tw, "%d of %d TPCs\n", total, g.N/2)
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile")
	c.Flags().StringVar(&calibration, "calibration", "", "calibration.json from carve bench fit")
	addOutputFlag(c, &out)
	return c
}

// newPredictBenchCmd is the model's evaluation on real co-runs.
func newPredictBenchCmd() *cobra.Command {
	var profiles, sizesFlag, outDir, out string
	var groups, rounds, device int
	var seed uint64
	c := &cobra.Command{
		Use:   "predict",
		Short: "Co-run random groups of profiled kernels and compare with the latency model",
		Long: `predict draws --groups random groups of 2 to 6 distinct kernels from the
profiles (the latency-prediction paper's section 7.3), each kernel on a
partition size drawn from --sizes with the group within the GPU, runs each
group in disjoint GPC-packed partitions (one process per kernel under MPS,
all started together in every round), and compares each kernel's median
latency with the predictions of the paper's model, carve's, and the latency
alone. The seed, groups, partitions and every measurement are saved.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if groups < 1 || rounds < 1 {
				return errors.New("--groups and --rounds: want at least 1")
			}
			g, ks, err := loadModel(profiles)
			if err != nil {
				return err
			}
			e, err := newBenchEnv(device)
			if err != nil {
				return err
			}
			defer e.Close()
			sizes, err := parseCounts(sizesFlag, len(e.t.TPCs))
			if err != nil {
				return err
			}
			if g.N != e.t.SMCount {
				return fmt.Errorf("the profiles are of a GPU with %d SMs, this one has %d", g.N, e.t.SMCount)
			}
			var kernels []string
			for name := range ks {
				kernels = append(kernels, name)
			}
			slices.Sort(kernels)
			drawn, err := model.RandomGroups(seed, groups, kernels, sizes, len(e.t.TPCs))
			if err != nil {
				return err
			}
			ev := &evaluate.Evaluation{Device: e.t.Device, UUID: e.t.UUID, Driver: e.t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339), Seed: seed, Rounds: rounds, Sizes: sizes, Profiles: profiles, GPU: g}
			w := bench.Workers{Exe: e.exe, Env: e.mpsEnv()}
			progress := progressBar("predict")
			for gi, members := range drawn {
				runs := make([]evaluate.Run, len(members))
				setups := make([]bench.Setup, len(members))
				argvs := make([][]string, len(members))
				var used partition.Set
				for i, m := range members {
					set := partition.Pack(e.t, m.TPCs, used)
					if len(set.Intersect(used)) > 0 {
						return fmt.Errorf("group %d: no room for %d more TPCs beside %s", gi, m.TPCs, used)
					}
					used = used.Union(set)
					runs[i] = evaluate.Run{Member: m, SMs: 2 * m.TPCs, Set: set.String()}
					setups[i] = bench.Setup{VictimPrefix: e.carveRun(set)}
					argvs[i] = []string{e.exe, "bench", "__corun", "--name", m.Kernel, fmt.Sprintf("--device=%d", device)}
				}
				if err := evaluate.Predict(g, ks, runs); err != nil {
					return err
				}
				c, err := w.StartCoRun(setups, argvs)
				if err != nil {
					return fmt.Errorf("group %d: %w", gi, err)
				}
				for range rounds {
					ms, err := c.Round()
					if err != nil {
						c.Stop()
						return fmt.Errorf("group %d: %w", gi, err)
					}
					for i := range runs {
						runs[i].MeasuredMS = append(runs[i].MeasuredMS, ms[i])
					}
				}
				c.Stop()
				for i := range runs {
					runs[i].Measured = bench.Summarize(runs[i].MeasuredMS).P50
				}
				ev.Groups = append(ev.Groups, runs)
				progress(gi+1, len(drawn))
			}
			ev.Summarize()
			if outDir == "" {
				outDir = "carve-predict-" + time.Now().Format("2006-01-02")
			}
			path, err := ev.Save(outDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and its plots\n", path)
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), ev)
			}
			return writeSummary(cmd, ev)
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile (with counters)")
	c.Flags().IntVar(&groups, "groups", 100, "random groups to co-run")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of the random groups")
	c.Flags().IntVar(&rounds, "rounds", 10, "times each group runs; each kernel's median counts")
	c.Flags().StringVar(&sizesFlag, "sizes", "11,22,33,44,55", "partition sizes to draw from, in TPCs (profiled sizes)")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the results (default carve-predict-DATE)")
	addOutputFlag(c, &out)
	return c
}

func writeSummary(cmd *cobra.Command, ev *evaluate.Evaluation) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%d groups, %d kernel runs, seed %d, on %s\n", len(ev.Groups), ev.Summary[0].N, ev.Seed, ev.Device)
	fmt.Fprintln(tw, "MODEL\tMEAN ABS ERROR\tMEAN ERROR\tOVER\tUNDER\tWITHIN 20%\tMAX OVER\tMAX UNDER\tMAE BY GROUP SIZE 2..6")
	for _, s := range ev.Summary {
		var by []string
		for k := 2; k <= 6; k++ {
			if v, ok := s.BySize[k]; ok {
				by = append(by, fmt.Sprintf("%.1f%%", 100*v))
			}
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%+.1f%%\t%d\t%d\t%d\t%+.0f%%\t%+.0f%%\t%s\n", s.Model, 100*s.MAE, 100*s.Mean, s.Over, s.Under,
			s.Within20, 100*s.MaxOver, 100*s.MaxUnd, strings.Join(by, " "))
	}
	fmt.Fprintln(tw, "paper (GPGPU-Sim, RTX 2060): 10.7% mean error, 285 over / 135 under of 420")
	return tw.Flush()
}

// newCoRunWorkerCmd is one kernel of a co-run group.
func newCoRunWorkerCmd() *cobra.Command {
	var name string
	var device int
	c := &cobra.Command{
		Use: "__corun", Hidden: true, Args: cobra.NoArgs,
		Short: "hold a kernel ready; run it once per line of input and print its time (internal)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			app, err := openApp(device, name)
			if err != nil {
				return err
			}
			return bench.ServeCoRun(app, os.Stdin, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&name, "name", "", "the kernel")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}

// newFitCmd fits carve's model to one evaluation and re-predicts others.
func newFitCmd() *cobra.Command {
	var profiles, outDir, out string
	c := &cobra.Command{
		Use:   "fit TRAIN.json [HELDOUT.json...]",
		Short: "Fit carve's latency model to measured co-runs and predict others with it (no GPU needed)",
		Long: `fit reads evaluations saved by carve bench predict, fits the shared DRAM
bandwidth of carve's model to the co-runs of TRAIN.json, and predicts TRAIN
(in sample) and every HELDOUT evaluation (out of sample) again with it. The
measurements stay as they were. Each is written to OUT/NAME/ with its plots,
and the constants to OUT/calibration.json, which carve predict and plan
take with --calibration.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			g, ks, err := loadModel(profiles)
			if err != nil {
				return err
			}
			train, err := evaluate.Load(args[0])
			if err != nil {
				return err
			}
			obs, err := train.Observed(ks)
			if err != nil {
				return err
			}
			b, mae, err := model.FitSharedBW(obs, model.Pull(ks), g.EMBW)
			if err != nil {
				return err
			}
			g.SharedBW = b
			fmt.Fprintf(cmd.ErrOrStderr(), "shared bandwidth %.0f GB/s (%.0f%% of the most one kernel reached, %.0f GB/s): %.1f%% mean absolute error on %s\n",
				b, 100*b/g.EMBW, g.EMBW, 100*mae, args[0])
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			calib, err := os.Create(filepath.Join(outDir, "calibration.json"))
			if err != nil {
				return err
			}
			err = writeJSON(calib, g)
			if cerr := calib.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			var all []*evaluate.Evaluation
			for i, path := range args {
				ev := train
				if i > 0 {
					if ev, err = evaluate.Load(path); err != nil {
						return err
					}
				}
				if err := ev.Repredict(g, ks); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				ev.FittedOn = args[0]
				name := "train-" + filepath.Base(filepath.Dir(path))
				if i > 0 {
					name = "heldout-" + filepath.Base(filepath.Dir(path))
				}
				if _, err := ev.Save(filepath.Join(outDir, name)); err != nil {
					return err
				}
				all = append(all, ev)
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			for i, ev := range all {
				fmt.Fprintf(cmd.OutOrStdout(), "%s (%s)\n", args[i], map[bool]string{true: "fitted on it", false: "held out"}[i == 0])
				if err := writeSummary(cmd, ev); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of the profiles the evaluations used")
	c.Flags().StringVar(&outDir, "out", "carve-fit", "directory for the re-predicted evaluations and calibration.json")
	addOutputFlag(c, &out)
	return c
}
