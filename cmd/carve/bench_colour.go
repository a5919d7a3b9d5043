// carve bench colour: FGPU's experiment, whether colouring memory by L2
// partition isolates a memory-bound victim on one side of the GPU from an
// interferer on the other.

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
)

func newColourCmd() *cobra.Command {
	var f benchFlags
	o := bench.ColourOptions{Progress: progressBar("colour"), Labelling: progressBar("labelling the pool by slice")}
	c := &cobra.Command{
		Use:   "colour",
		Short: "Does colouring memory by L2 partition isolate a memory-bound victim? (CP against CMP)",
		Long: `colour runs FGPU's experiment on this GPU with carve's memory map. It finds
the two sides of SMs that see the two L2 partitions as near (carve memmap),
labels every 128-byte line of a pool of physical pages with its partition,
and times a vector-add victim on the TPCs of one side while a vector-add
interferer runs without pause on the TPCs of the other:

  CP            compute partitioning only: both on plain arrays
  CMP, L2 partitions
                compute and memory partitioning: the victim's arrays only in
                lines of the partition near its side, the interferer's only
                in the other's
  CMP, DRAM groups
                the victim's arrays only in lines of one half of the DRAM
                groups (carve memmap's slices and groups, learnt on this
                pool), the interferer's only in the other half
  L2 set-aside  CP, with the most L2 the driver allows set aside for the
                victim's arrays through an access policy window

each alone and together, for a victim that streams through DRAM (--mib)
and one whose arrays fit in the set-aside (--small-mib); and CP through line
tables that map every line to itself, which prices the translation alone.
Coloured arrays are reached through a table of lines (one extra load per 32
floats), which the CMP-alone time includes. The victim and the interferer
are two streams of this process, each launch confined to its TPCs by
carve's hook.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(f.out); err != nil {
				return err
			}
			o.Device = f.device
			r, err := bench.Colour(o)
			if err != nil {
				return err
			}
			return f.finish(cmd, r)
		},
	}
	c.Flags().IntVar(&o.Pages, "pages", 1024, "physical 2 MiB pages in the labelled pool")
	c.Flags().Float64Var(&o.MiB, "mib", 128, "MiB per array of the large victim and of the interferer (three arrays each)")
	c.Flags().Float64Var(&o.SmallMiB, "small-mib", 8, "MiB per array of the small victim, whose arrays fit in the L2 set-aside")
	c.Flags().IntVar(&o.Reps, "reps", 200, "victim runs timed per setup")
	f.add(c)
	return c
}
