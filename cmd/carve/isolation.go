package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
)

func newIsolationCmd() *cobra.Command {
	var reps, device int
	var share float64
	var outDir, out string
	c := &cobra.Command{
		Use:   "isolation",
		Short: "FGPU's isolation experiment: an app suite on half the GPU beside interferers",
		Long: `isolation runs a suite of six apps (matrix multiply, bitonic sort, vector add,
scalar product, fast Walsh transform, a CFD-like stencil; each checked against
a CPU reference first) in one partition, alone and while matrix multiply, the
Walsh transform or vector add runs without pause in the other, for each
mechanism: none (MPS, no limits), MPS active-thread percentages, carve (TPC
sets, each program a separate process under MPS) and green contexts (both
programs as threads of this process: the API cannot partition processes).

For each app and mechanism it reports FGPU's variation: the largest mean time
beside an interferer over the mean time with the other partition idle, minus
one; then the average and maximum over the apps (FGPU's Table III).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if reps < 1 {
				return errors.New("--reps: want at least 1")
			}
			if share <= 0 || share >= 1 {
				return fmt.Errorf("--share %g: want a fraction between 0 and 1", share)
			}
			e, err := newBenchEnv(device)
			if err != nil {
				return err
			}
			defer e.Close()
			vset, iset := e.split(share)
			pct := func(f float64) []string {
				return []string{fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%.0f", 100*f)}
			}
			setups := []bench.Setup{
				{Mechanism: "none"},
				{Mechanism: fmt.Sprintf("MPS %.0f%%/%.0f%%", 100*share, 100*(1-share)), VictimEnv: pct(share), CompEnv: pct(1 - share)},
				{Mechanism: fmt.Sprintf("carve %d/%d TPCs", len(vset), len(iset)), VictimPrefix: e.carveRun(vset), CompetitorPrefix: e.carveRun(iset)},
			}
			comps := append([]string{""}, bench.Interferers...)
			w := bench.Workers{Exe: e.exe, Env: e.mpsEnv()}
			argv := []string{e.exe, "bench", "__suite", fmt.Sprintf("--reps=%d", reps), fmt.Sprintf("--device=%d", device)}
			r := &bench.Result{Benchmark: "isolation", Device: e.t.Device, UUID: e.t.UUID, Driver: e.t.Driver,
				Date: time.Now().UTC().Format(time.RFC3339),
				Params: map[string]any{"reps": reps, "share": share, "victim_tpcs": vset.String(), "interferer_tpcs": iset.String(),
					"apps": bench.SuiteApps, "interferers": bench.Interferers, "baseline": "none"}}
			progress := progressBar("isolation")
			step, total := 0, (len(setups)+1)*len(comps)
			done := func() { step++; progress(step, total) }
			for _, s := range setups {
				for _, comp := range comps {
					var byApp map[string][]float64
					err := func() error {
						if comp != "" {
							stop, err := w.StartCompetitor(s, comp)
							if err != nil {
								return err
							}
							defer stop()
						}
						return w.Victim(s, &byApp, argv...)
					}()
					if err != nil {
						return fmt.Errorf("%s, interferer %q: %w", s.Mechanism, comp, err)
					}
					r.Series = append(r.Series, bench.SuiteSeries(s.Mechanism, comp, byApp))
					done()
				}
			}
			// Green contexts last, in this process (see enforcement).
			groups, rest, err := bench.GreenGroups(device)
			if err != nil {
				return fmt.Errorf("green contexts: %w", err)
			}
			ga, gb := bench.GreenShares(groups, rest, share)
			mech := fmt.Sprintf("green %d/%d SMs", bench.SMsOf(ga), bench.SMsOf(gb))
			for _, comp := range comps {
				var byApp map[string][]float64
				err := bench.GreenPair(device, ga, gb, comp, func(s *bench.Session) error {
					if err := checkSuite(s); err != nil {
						return err
					}
					var err error
					byApp, err = bench.SuiteSamples(s, reps)
					return err
				})
				if err != nil {
					return fmt.Errorf("%s, interferer %q: %w", mech, comp, err)
				}
				r.Series = append(r.Series, bench.SuiteSeries(mech, comp, byApp))
				done()
			}
			rows := bench.Variations(r)
			r.Params["variation"] = rows
			return finish(cmd, r, outDir, out)
		},
	}
	c.Flags().IntVar(&reps, "reps", 1000, "timed runs of each app per setup (FGPU: 1000)")
	c.Flags().Float64Var(&share, "share", 0.5, "the apps' share of the GPU; the interferer gets the rest")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "", "directory for the JSON and plots (default carve-bench-DATE)")
	addOutputFlag(c, &out)
	return c
}

// checkSuite checks every app against its CPU reference.
func checkSuite(s *bench.Session) error {
	for _, app := range bench.SuiteApps {
		if err := bench.CheckApp(s, app); err != nil {
			return err
		}
	}
	return nil
}

// newSuiteWorkerCmd is the isolation benchmark's victim process.
func newSuiteWorkerCmd() *cobra.Command {
	var reps, device int
	c := &cobra.Command{
		Use: "__suite", Hidden: true, Args: cobra.NoArgs,
		Short: "check and time the isolation suite, print the times as JSON (internal)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := bench.Open(device)
			if err != nil {
				return err
			}
			if err := checkSuite(s); err != nil {
				return err
			}
			byApp, err := bench.SuiteSamples(s, reps)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(byApp)
		},
	}
	c.Flags().IntVar(&reps, "reps", 1000, "timed runs of each app after one warm-up")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}
