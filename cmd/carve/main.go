// Command carve partitions one NVIDIA GPU's TPCs between unmodified CUDA
// processes, the way taskset partitions CPUs.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "carve",
		Short: "Partition a GPU's TPCs between unmodified CUDA processes",
		Long: `carve confines each CUDA process to a set of the GPU's TPCs (pairs of SMs),
enforced by the hardware, so that several programs co-run on one GPU without
taking each other's compute. Partitions can be resized while programs run.

TPCs are named by logical index 0..N-1 over the live TPCs, GPC by GPC
(see 'carve topo'). A partition is given as one of:
  -t 0-15,20   these TPCs        -g 2,3   these whole GPCs
  -n 20        any 20 TPCs, packed into as few GPCs as possible (avoiding busy ones)
  -n 50%       that share of all TPCs
and --device names the GPUs (default 0): --device 0,1 the partition on each,
--device 1:8 GPU 1's own (8 TPCs there), --device all every GPU.

Typical use:
  carve topo
  carve mps start
  carve run -t 0-15 -- python serve_a.py
  carve run -n 20 -- ./batch_job
  carve ls
  carve set -p 4242 -t 0-7
  carve mps stop`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("carve {{.Version}}\n") // as carve version says it
	root.AddCommand(newTopoCmd(), newDiscoverCmd(), newRunCmd(), newSetCmd(), newLsCmd(), newMPSCmd(), newBenchCmd(), newProfileCmd(), newPredictCmd(), newPlanCmd(), newMemmapCmd(), newDaemonCmd(), newTopCmd(), newNodeCmd(), newVersionCmd())
	groupsRefuseUnknown(root)
	return root
}

// groupsRefuseUnknown makes each command that only groups others (carve
// bench, carve mps) fail on a command it does not have, naming those it
// has, where cobra would print its help and succeed.
func groupsRefuseUnknown(c *cobra.Command) {
	for _, sub := range c.Commands() {
		groupsRefuseUnknown(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return // the root: cobra refuses unknown commands there
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return fmt.Errorf("%s has no command %q: want one of %s", cmd.CommandPath(), args[0], strings.Join(names, ", "))
	}
}

func main() {
	err := newRoot().Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "carve:", err)
	var ee *exitError
	var xe *exec.Error
	switch {
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case errors.As(err, &xe):
		os.Exit(127)
	}
	os.Exit(1)
}
