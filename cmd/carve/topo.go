package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

func addOutputFlag(c *cobra.Command, dst *string) {
	c.Flags().StringVarP(dst, "output", "o", "table", "output format: table or json")
}

func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return fmt.Errorf("unknown output format %q: want table or json", o)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// loadTopology finds the topology of GPU ordinal, discovering it in a child
// carve process when it is not cached.
func loadTopology(ordinal int, refresh bool) (*topo.Topology, bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, false, err
	}
	return topo.Load(topo.LoadOptions{
		Ordinal:  ordinal,
		Refresh:  refresh,
		Discover: topo.ChildDiscoverer(exe, "__discover"),
	})
}

func newTopoCmd() *cobra.Command {
	var refresh bool
	var out string
	var device int
	c := &cobra.Command{
		Use:   "topo",
		Short: "Show the GPU's live TPCs, their SMs and GPCs",
		Long: `topo shows the GPU as carve partitions it: each live TPC's logical index,
its bit in the hardware mask, its SMs and its GPC.

The first run discovers this by launching small kernels under single-bit TPC
masks (outside MPS, which hides real SM ids); the result is cached per GPU
UUID and driver version. --refresh discovers again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			t, cached, err := loadTopology(device, refresh)
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), t)
			}
			printTopology(cmd.OutOrStdout(), t, cached)
			return nil
		},
	}
	c.Flags().BoolVar(&refresh, "refresh", false, "discover again instead of using the cache")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	addOutputFlag(c, &out)
	return c
}

func printTopology(w io.Writer, t *topo.Topology, cached bool) {
	src := fmt.Sprintf("discovered in %.0f ms", t.DiscoveryMS)
	if cached {
		src = "cached, discovered " + t.DiscoveredAt
	}
	fmt.Fprintf(w, "%s  %s\n", t.Device, t.UUID)
	fmt.Fprintf(w, "driver %s (CUDA %d.%d), compute %s, %d SMs, L2 %d MiB\n",
		t.Driver, t.CUDAVersion/1000, t.CUDAVersion%1000/10, t.Compute, t.SMCount, t.L2Bytes>>20)
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

// newDiscoverCmd is the child process that topo.ChildDiscoverer starts.
func newDiscoverCmd() *cobra.Command {
	var device, clusterSize int
	c := &cobra.Command{
		Use:    "__discover",
		Short:  "discover the topology and print it as JSON (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt := topo.Options{ClusterSize: clusterSize, Progress: progressBar("discovering TPCs")}
			t, err := topo.DiscoverGPU(device, opt)
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), t)
		},
	}
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().IntVar(&clusterSize, "cluster-size", 0, "blocks per cluster when grouping GPCs (default 8)")
	return c
}

// progressBar returns a progress callback that draws a bar on stderr when
// stderr is a terminal, and does nothing otherwise (logs stay clean).
func progressBar(what string) func(done, total int) {
	if !term.IsTerminal(int(os.Stderr.Fd())) { // a log: a line every tenth
		start, last := time.Now(), -1
		return func(done, total int) {
			if tenth := 10 * done / max(1, total); tenth != last {
				last = tenth
				fmt.Fprintf(os.Stderr, "%s: %d/%d after %s\n", what, done, total, time.Since(start).Round(time.Second))
			}
		}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(what), progressbar.OptionClearOnFinish())
		}
		bar.Set(done)
	}
}
