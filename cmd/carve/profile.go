package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/profile"
	"github.com/carve-gpu/carve/internal/topo"
)

func newProfileCmd() *cobra.Command {
	var reps, device int
	var tpcsFlag, ncuFlag, outDir, out, name string
	c := &cobra.Command{
		Use:   "profile [KERNEL...] | --name NAME -- COMMAND [ARGS...]",
		Short: "Time kernels of carve's prediction suite, or a program, alone on every partition size",
		Long: `profile runs each kernel (default: the whole prediction suite, ` + strings.Join(bench.PredictKernels, ", ") + `),
checked against a CPU reference first, alone on partitions of the given TPC
counts (GPC-packed, through carve's masks), and records its time at each.
Where Nsight Compute (ncu) is installed it also records the kernel's DRAM
bytes, L2 requests and executed instructions on the whole GPU, which the
latency model needs. Each profile is written as OUT/KERNEL.json.

With --name NAME -- COMMAND, profile times a whole program instead, from start
to exit, under carve run on each partition size, and counts the work of all
its kernels under ncu; the profile is OUT/NAME.json and the model takes it
like a kernel's (one long "kernel" whose time includes the program's start).`,
		Example: `  carve profile --out carve-profiles
  carve profile --tpcs 11,22,33,66 --name resnet --out carve-profiles -- python3 infer.py --batch 16`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if reps < 1 {
				return errors.New("--reps: want at least 1")
			}
			var program []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				program, args = args[dash:], args[:dash]
				if len(program) == 0 {
					return errors.New("nothing after --: name the program to profile")
				}
				if len(args) > 0 {
					return errors.New("name suite kernels or a program after --, not both")
				}
				if name == "" || strings.ContainsAny(name, "/ ") {
					return fmt.Errorf("--name %q: give the program's profile a file name", name)
				}
			}
			kernels := args
			if len(kernels) == 0 {
				kernels = bench.PredictKernels
			}
			for _, k := range kernels {
				if !slices.Contains(bench.PredictKernels, k) {
					return fmt.Errorf("unknown kernel %q: want one of %s", k, strings.Join(bench.PredictKernels, ", "))
				}
			}
			if _, err := parseCounts(tpcsFlag, math.MaxInt); err != nil { // before the GPU is asked
				return err
			}
			t, _, err := loadTopology(device, false)
			if err != nil {
				return err
			}
			tpcs, err := parseCounts(tpcsFlag, len(t.TPCs))
			if err != nil {
				return err
			}
			ncu := ncuFlag
			switch ncuFlag {
			case "off":
				ncu = ""
			case "auto":
				if ncu, err = profile.FindNCU(); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "carve: note:", err)
					ncu = ""
				}
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if program != nil {
				return profileProgram(cmd, t, exe, name, program, tpcs, reps, device, ncu, outDir, out)
			}
			s, err := bench.Open(device)
			if err != nil {
				return err
			}
			bw, err := profile.NominalBW(device)
			if err != nil {
				return err
			}
			progress := progressBar("profile")
			step, total := 0, len(kernels)*len(tpcs)
			var profiles []*profile.Profile
			for _, k := range kernels {
				if err := bench.CheckApp(s, k); err != nil {
					return err
				}
				app, err := bench.NewApp(s, k)
				if err != nil {
					return err
				}
				p := &profile.Profile{Kernel: k, Device: t.Device, UUID: t.UUID, Driver: t.Driver,
					Date: time.Now().UTC().Format(time.RFC3339), SMs: t.SMCount, TPCs: len(t.TPCs), Reps: reps, NominalBW: bw}
				if p.Sizes, err = profile.Times(app, t, tpcs, reps, func() { step++; progress(step, total) }); err != nil {
					return err
				}
				if ncu != "" {
					// ncu runs a process of its own, without carve's hook.
					if p.Counters, err = profile.Count(ncu, app.Kernel(), exe, "bench", "__kernel", "--name", k, fmt.Sprintf("--device=%d", device)); err != nil {
						return fmt.Errorf("counting %s: %w", k, err)
					}
				}
				profiles = append(profiles, p)
			}
			return writeProfiles(cmd, profiles, outDir, out)
		},
	}
	c.Flags().StringVar(&tpcsFlag, "tpcs", "all", "TPC counts to profile: all (1..N) or a list such as 1,2,4,8,16,33,66")
	c.Flags().IntVar(&reps, "reps", 10, "timed runs per size, after one warm-up")
	c.Flags().StringVar(&ncuFlag, "ncu", "auto", "Nsight Compute CLI for the counters: auto (find it), off, or its path")
	c.Flags().StringVar(&name, "name", "", "the profile's name, when a program is profiled (-- COMMAND)")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "carve-profiles", "directory for the profiles")
	addOutputFlag(c, &out)
	return c
}

// profileProgram profiles a whole program: its times through carve run,
// its counters under ncu on the whole GPU.
func profileProgram(cmd *cobra.Command, t *topo.Topology, exe, name string, program []string, tpcs []int, reps, device int, ncu, outDir, out string) error {
	shim, err := findShim("")
	if err != nil {
		return err
	}
	bw, err := profile.NominalBW(device)
	if err != nil {
		return err
	}
	prefix := func(set partition.Set) []string {
		return []string{exe, "run", "-q", "--shim", shim, "--device", strconv.Itoa(device), "-t", set.String(), "--"}
	}
	p := &profile.Profile{Kernel: name, Program: program, Device: t.Device, UUID: t.UUID, Driver: t.Driver,
		Date: time.Now().UTC().Format(time.RFC3339), SMs: t.SMCount, TPCs: len(t.TPCs), Reps: reps, NominalBW: bw}
	progress := progressBar("profile " + name)
	step := 0
	if p.Sizes, err = profile.ProgramTimes(prefix, program, t, tpcs, reps, func() { step++; progress(step, len(tpcs)) }); err != nil {
		return err
	}
	if ncu != "" {
		if p.Counters, err = profile.Count(ncu, "", program...); err != nil {
			return fmt.Errorf("counting %s: %w", name, err)
		}
		p.Counters.Note = "summed over every kernel the program launched"
	}
	return writeProfiles(cmd, []*profile.Profile{p}, outDir, out)
}

// writeProfiles saves profiles into dir and prints them.
func writeProfiles(cmd *cobra.Command, profiles []*profile.Profile, outDir, out string) error {
	for _, p := range profiles {
		if _, err := p.Save(outDir); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d profiles to %s\n", len(profiles), outDir)
	if out == "json" {
		return writeJSON(cmd.OutOrStdout(), profiles)
	}
	{
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KERNEL\tMS ON FEWEST TPCS\tMS ON MOST\tSPEEDUP\tDRAM GB/S\tL2 REQUESTS\tINSTRUCTIONS")
		for _, p := range profiles {
			first, last := p.Sizes[0], p.Sizes[len(p.Sizes)-1]
			fmt.Fprintf(tw, "%s\t%.3f (%d TPCs)\t%.3f (%d TPCs)\t%.1fx", p.Kernel, first.Stats.P50, first.TPCs, last.Stats.P50, last.TPCs, first.Stats.P50/last.Stats.P50)
			if c := p.Counters; c != nil {
				fmt.Fprintf(tw, "\t%.0f\t%.3g\t%.3g\n", c.DRAMBytes/c.DurationNS, c.L2Requests, c.Instructions)
			} else {
				fmt.Fprintln(tw, "\t-\t-\t-")
			}
		}
		return tw.Flush()
	}
}

// parseCounts parses "all" (1..max) or a comma-separated list of counts in
// 1..max, returned in increasing order without repeats.
func parseCounts(s string, most int) ([]int, error) {
	if s == "all" {
		out := make([]int, most)
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("TPC count %q: want a whole number from 1 to %d", f, most)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// newKernelWorkerCmd runs one kernel of the suite a few times, for ncu.
func newKernelWorkerCmd() *cobra.Command {
	var name string
	var reps, device int
	c := &cobra.Command{
		Use: "__kernel", Hidden: true, Args: cobra.NoArgs,
		Short: "run one suite kernel reps times (internal)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			app, err := openApp(device, name)
			if err != nil {
				return err
			}
			for range reps {
				if _, err := app.Iterate(); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "the kernel")
	c.Flags().IntVar(&reps, "reps", 2, "runs")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	return c
}

// openApp prepares one app of carve's suites in a session of its own.
func openApp(device int, name string) (*bench.App, error) {
	s, err := bench.Open(device)
	if err != nil {
		return nil, err
	}
	return bench.NewApp(s, name)
}
