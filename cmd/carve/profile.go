// carve profile: kernels of carve's prediction suite, or a program, timed
// alone on every partition size.

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/profile"
	"github.com/carve-gpu/carve/internal/workload"
)

func newProfileCmd() *cobra.Command {
	var outDir, out string
	o := profile.Options{}
	c := &cobra.Command{
		Use:   "profile [KERNEL...] | --name NAME -- COMMAND [ARGS...] | --table FILE -- COMMAND [ARGS...]",
		Short: "Time kernels of carve's prediction suite, or a program, alone on every partition size",
		Long: `profile runs each kernel (default: the whole prediction suite, ` + strings.Join(workload.PredictKernels, ", ") + `),
checked against a CPU reference first, alone on partitions of the given TPC
counts (GPC-packed, through carve's masks), and records its time at each.
Where Nsight Compute (ncu) is installed it also records the kernel's DRAM
bytes, L2 requests and executed instructions on the whole GPU, which the
latency model needs. Each profile is written as OUT/KERNEL.json.

With --name NAME -- COMMAND, profile times a whole program instead, from start
to exit, under carve run on each partition size, and counts the work of all
its kernels under ncu; the profile is OUT/NAME.json and the model takes it
like a kernel's (one long "kernel" whose time includes the program's start).

With --table FILE -- COMMAND, profile runs the program once under ncu, which
measures the first launch of each distinct kernel function (by its mangled
name): its DRAM bytes, time and DRAM throughput as a share of the peak. FILE
is the program's kernel table, for carve run --kernels: carve counts its
launches' DRAM bytes by it, and a BE tenant's kernels under ` + fmt.Sprint(ctl.ComputeBoundPct) + `% of the
peak run beside busy LS work.`,
		Example: `  carve profile --out carve-profiles
  carve profile --tpcs 11,22,33,66 --name resnet --out carve-profiles -- python3 infer.py --batch 16
  carve profile --table densenet.json -- python3 infer.py --batch 64`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			o.Kernels, o.Program = args, nil
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				o.Kernels, o.Program = args[:dash], append([]string{}, args[dash:]...)
			}
			if o.Table != "" {
				t, err := profile.RunTable(o)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d kernels, %d compute-bound (under %d%% of the DRAM peak)\n",
					o.Table, len(t.Kernels), t.ComputeBound(), ctl.ComputeBoundPct)
				if out == "json" {
					return writeJSON(cmd.OutOrStdout(), t)
				}
				return nil
			}
			what := "profile"
			if o.Program != nil {
				what += " " + o.Name
			}
			o.Progress, o.Note = progressBar(what), func(s string) { note(cmd, "%s", s) }
			profiles, err := profile.Run(o)
			if err != nil {
				return err
			}
			for _, p := range profiles {
				if _, err := p.Save(outDir); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d profiles to %s\n", len(profiles), outDir)
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), profiles)
			}
			return profile.WriteTable(cmd.OutOrStdout(), profiles)
		},
	}
	c.Flags().StringVar(&o.TPCs, "tpcs", "all", "TPC counts to profile: all (1..N) or a list such as 1,2,4,8,16,33,66")
	c.Flags().IntVar(&o.Reps, "reps", 10, "timed runs per size, after one warm-up")
	c.Flags().StringVar(&o.NCU, "ncu", "auto", "Nsight Compute CLI for the counters: auto (find it), off, or its path")
	c.Flags().StringVar(&o.Name, "name", "", "the profile's name, when a program is profiled (-- COMMAND)")
	c.Flags().StringVar(&o.Table, "table", "", "write the program's kernel table (-- COMMAND) to this file, for carve run --kernels")
	c.Flags().IntVar(&o.Device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "carve-profiles", "directory for the profiles")
	addOutputFlag(c, &out)
	return c
}
