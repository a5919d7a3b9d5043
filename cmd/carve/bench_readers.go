// carve bench readers: FGPU's Fig. 8, one SM's DRAM loads beside SMs loading
// lines of the same L2 slice, of its group, or of another group.

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
)

func newReadersCmd() *cobra.Command {
	var f benchFlags
	o := bench.ReadersOptions{Progress: progressBar("readers")}
	c := &cobra.Command{
		Use:   "readers",
		Short: "FGPU's Fig. 8: one SM's DRAM loads beside SMs loading lines of the same slice, group, or another group",
		Long: `readers learns the L2 slices and DRAM groups of a pool (as carve memmap
does), then times one SM loading --lines lines of one slice from DRAM, one
at a time, while 0 to all other SMs load other lines from DRAM without
pause (--threads each), the secondary lines being

  same slice        other lines of the primary's slice
  same group        lines of the other slices of the primary's DRAM group
                    (left out where every group is a single slice)
  other groups      lines of slices of the other groups
  anywhere          lines of every slice (the primary's too), as uncoloured
                    memory would be

The primary's mean load time against the number of secondary SMs says
which colouring keeps a tenant's DRAM accesses apart from its neighbours'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(f.out); err != nil {
				return err
			}
			o.Device = f.device
			r, err := bench.Readers(o)
			if err != nil {
				return err
			}
			return f.finish(cmd, r)
		},
	}
	c.Flags().IntVar(&o.PrimaryLines, "lines", 64, "lines the primary SM loads")
	c.Flags().IntVar(&o.SecondaryLines, "secondary-lines", 512, "lines the secondary SMs load")
	c.Flags().IntVar(&o.Threads, "threads", 32, "threads per secondary SM")
	c.Flags().IntVar(&o.Reps, "reps", 16, "timed loads per primary line")
	f.add(c)
	return c
}
