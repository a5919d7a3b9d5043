// carve topo: each GPU's live TPCs, their SMs and GPCs, and how they are
// printed.

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

func newTopoCmd() *cobra.Command {
	var refresh bool
	var out string
	var device int
	c := &cobra.Command{
		Use:   "topo [--device N]",
		Short: "Show each GPU's live TPCs, their SMs and GPCs",
		Long: `topo shows every GPU CUDA sees (--device N: that one) as carve partitions
it: each live TPC's logical index, its bit in the hardware mask, its SMs and
its GPC. GPUs of one model differ in which TPCs are live, so each has its
own. -o json writes a list of the GPUs' topologies, by ordinal.

The first run discovers this by launching small kernels under single-bit TPC
masks (outside MPS, which hides real SM ids); the result is cached per GPU
UUID and driver version. --refresh discovers again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			var tops []*topo.Topology
			var cached []bool
			var err error
			first := 0
			if cmd.Flags().Changed("device") {
				t, c, err := discover.Topology(device, refresh)
				if err != nil {
					return err
				}
				tops, cached, first = []*topo.Topology{t}, []bool{c}, device
			} else if tops, cached, err = discover.Topologies(refresh); err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), tops)
			}
			for i, t := range tops {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				printTopology(cmd.OutOrStdout(), first+i, t, cached[i])
			}
			return nil
		},
	}
	c.Flags().BoolVar(&refresh, "refresh", false, "discover again instead of using the cache")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal (default: every GPU)")
	addOutputFlag(c, &out)
	return c
}

func printTopology(w io.Writer, ordinal int, t *topo.Topology, cached bool) {
	src := fmt.Sprintf("discovered in %.0f ms", t.DiscoveryMS)
	if cached {
		src = "cached, discovered " + t.DiscoveredAt
	}
	fmt.Fprintf(w, "GPU %d: %s  %s\n", ordinal, t.Device, t.UUID)
	fmt.Fprintf(w, "driver %s (CUDA %d.%d), compute %s, %d SMs, L2 %d MiB, memory %d MiB\n",
		t.Driver, t.CUDAVersion/1000, t.CUDAVersion%1000/10, t.Compute, t.SMCount, t.L2Bytes>>20, t.MemoryBytes>>20)
	fmt.Fprintf(w, "%s; live mask bits %s (%s)\n\n", t.Summary(), bitList(t), src)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPC\tTPCS\tMASK BITS\tSMS")
	for _, g := range t.GPCs {
		var bits, sms []int
		for _, i := range g.TPCs {
			bits = append(bits, t.TPCs[i].Bit)
			sms = append(sms, t.TPCs[i].SMs...)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", g.Index, partition.Set(g.TPCs), partition.Set(bits), joinInts(sms))
	}
	tw.Flush()
	for _, n := range t.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func bitList(t *topo.Topology) string {
	var bits []int
	for b := 0; b < topo.MaskBits; b++ {
		if t.Live().Has(b) {
			bits = append(bits, b)
		}
	}
	return partition.Set(bits).String()
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
