package main

import (
	"errors"
	"fmt"
	"os"
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
	var profiles, which, out string
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
			g, ks, err := loadModel(profiles)
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
			predict := g.PredictMeasured
			switch which {
			case "paper":
				predict = g.Predict
			case "carve":
			default:
				return fmt.Errorf("unknown model %q: want paper or carve", which)
			}
			pred, ws, err := predict(ps)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"gpu": g, "placements": args, "predictions": pred, "windows": ws})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KERNEL\tTPCS\tMEASURED ALONE MS\tPREDICTED ALONE MS\tPREDICTED CO-RUN MS\tSLOWDOWN")
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
	c.Flags().StringVar(&which, "model", "carve", "paper (the equations as written) or carve")
	addOutputFlag(c, &out)
	return c
}

func newPlanCmd() *cobra.Command {
	var profiles, out string
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
			g, ks, err := loadModel(profiles)
			if err != nil {
				return err
			}
			kernels := make([]*model.Kernel, len(names))
			for i, n := range names {
				if kernels[i] = ks[n]; kernels[i] == nil {
					return fmt.Errorf("no profile of %s in %s", n, profiles)
				}
			}
			sms, pred, err := model.Plan(g, kernels, deadlines)
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
				fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\n", names[i], sms[i]/2, deadlines[i], pred[i].CoRun)
				total += sms[i] / 2
			}
			fmt.Fprintf(tw, "%d of %d TPCs\n", total, g.N/2)
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&profiles, "profiles", "carve-profiles", "directory of profiles made by carve profile")
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
			s, err := bench.Open(device)
			if err != nil {
				return err
			}
			app, err := bench.NewApp(s, name)
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
