// carve memmap: the GPU's L2 and DRAM layout, measured from user space.

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/memmap"
)

func newMemmapCmd() *cobra.Command {
	var device int
	var outDir, out string
	o := memmap.Options{Progress: progressBar("memmap")}
	c := &cobra.Command{
		Use:   "memmap",
		Short: "Measure the GPU's L2 and DRAM layout from user space: latencies and L2 partitions",
		Long: `memmap times loads on the GPU to find how its memory is laid out:

  latencies   an L2 hit and a DRAM access (random pointer chases over 4 MiB
              and 512 MiB), and the mean cost of sequential loads at strides
              of 4 to 512 bytes (where it stops falling shows the fetch size)
  partitions  a pool of physical pages (cuMemCreate, mapped in order) is
              timed chunk by chunk from one block on every SM; chunks an SM
              sees fast are in the L2 partition near it. Each chunk is
              labelled by the vote of all SMs; runs of labels give the
              interleave, and page-by-page comparison whether the pattern
              repeats in every physical page
  slices      in a second pool, one line at a time is loaded from DRAM by
              every thread of half the SMs while the other half time a DRAM
              load of every line of the first --learn-mib MiB: the lines that
              wait far longer share the hammered line's L2 slice. Lines are
              hammered until every line has a slice (a class).
  groups      each slice's lines in turn are hammered from DRAM; slices that
              slow each other share DRAM (a group): memory of different
              groups can be given to tenants that must not interfere
  L2 sets     the lines that evict the pool's first line from the L2 when
              loaded after it (SGDRC's search, repeated): the set's ways
  DRAM pairs  two loads from DRAM at once, by the two lines' slices

Run it with the GPU otherwise idle. --scans labels the same pool again to
see how stable the labels are. Writes OUT/memmap.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			if err := o.Check(); err != nil {
				return err
			}
			t, _, err := discover.Topology(device, false)
			if err != nil {
				return err
			}
			p, err := memmap.Open(device)
			if err != nil {
				return err
			}
			r, err := memmap.Run(p, t, o)
			if err != nil {
				return err
			}
			path, err := r.Save(outDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			return r.WriteTable(cmd.OutOrStdout())
		},
	}
	c.Flags().IntVar(&o.Pages, "pages", 16, "physical pages in the pool")
	c.Flags().IntVar(&o.Chunk, "chunk", 1024, "bytes per labelled chunk")
	c.Flags().IntVar(&o.Reps, "reps", 8, "timed L2 hits per chunk and SM")
	c.Flags().IntVar(&o.Scans, "scans", 2, "labellings of the pool")
	c.Flags().BoolVar(&o.KeepRaw, "raw", false, "keep every timing in the JSON (large)")
	c.Flags().IntVar(&o.PairBytes, "pair-bytes", 1<<20, "time DRAM load pairs from the second pool's start to every line within this many bytes (0: none)")
	c.Flags().IntVar(&o.LearnMiB, "learn-mib", 4, "MiB whose lines are sorted into slices and DRAM groups (0: skip slices, groups, L2 sets and pairs)")
	c.Flags().BoolVar(&o.Evict, "evict", true, "find the L2 set of a line")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().StringVar(&outDir, "out", "carve-memmap", "directory for memmap.json")
	addOutputFlag(c, &out)
	return c
}
