// The hidden command that discovers a GPU's topology in a child process
// (discover.ChildDiscoverer starts it) and prints it as JSON.

package main

import (
	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/topo"
)

// newDiscoverCmd is the child process that discover.ChildDiscoverer starts.
func newDiscoverCmd() *cobra.Command {
	var device, clusterSize int
	c := &cobra.Command{
		Use:    discover.DiscoverCommand,
		Short:  "discover the topology and print it as JSON (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt := topo.Options{ClusterSize: clusterSize, Progress: progressBar("discovering TPCs")}
			t, err := discover.DiscoverGPU(device, opt)
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
