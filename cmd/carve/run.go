// carve run: an unmodified CUDA program run inside a TPC partition.

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/preload"
)

func newRunCmd() *cobra.Command {
	var spec specFlags
	var tide tideFlags
	var shim string
	var devices []string
	var connections int
	var allowUnpartitioned, allSMs, noMPS, quiet bool
	c := &cobra.Command{
		Use:   "run (-t TPCS | -g GPCS | -n COUNT) [--device N[,M...]|N:SPEC] [flags] -- COMMAND [ARGS...]",
		Short: "Run an unmodified CUDA program inside a TPC partition",
		Long: `run starts COMMAND with every kernel it (and its child processes) launches
confined to the given TPCs. The program needs no change: libcarve.so is
preloaded and applies the partition to each kernel launch in the driver.

With --ls and --be, tenants share the GPU over time as well ("tide"): while
an LS tenant has work on the GPU, BE tenants are held back (but for
--be-share of the time, off the LS tenants' TPCs, or on their --be-floor),
keep at most --inflight kernels queued, and take the whole GPU again as soon
as it is done. With no LS request for a second, BE queues are not bounded.
A BE tenant's partition is all TPCs unless given; LS tenants borrow every
TPC that no other LS tenant reserved, no plain partition holds and no BE
floor takes (--own: none, so that a BE with --be-share 1 runs on the rest
beside them instead of waiting). A BE floor is a few TPCs placed like a
partition, so that the BE runs on while LS work is in flight, drawing only
the memory bandwidth those TPCs can.

--device names the GPUs (default 0): the partition is on each GPU named
(-n 16 --device 0,1: 16 TPCs on each), or a GPU takes its own (--device
0:t=0-15 --device 1:8: TPCs 0-15 of GPU 0, any 8 of GPU 1); --device all
names every GPU. Each GPU's TPCs are chosen on that GPU, as its own
tenant's would be, all or none; each kernel runs on the partition of the
GPU it is launched on, and one launched on a GPU not named is refused.

Partitions do not overlap unless asked to: -n takes free TPCs and fails,
saying how many are free, when too few are; -t and -g fail when they meet
another partition. --share allows both (shared TPCs are time-shared).
Placement is atomic: concurrent runs never pick the same free TPCs.

--mem limits the GPU memory the program and its children may allocate
together: the shim refuses an allocation past it (out of memory) and tells
the program the limit as the GPU's total memory; under MPS the driver holds
each process to it as well, its context included. The limits of the GPU's
tenants must fit its memory, each counted with a context's reserve outside
MPS; a limit that does not fit fails, saying how much is free, unless
--share over-commits it. Tenants without a limit count for nothing and are
guaranteed nothing: they may take what limited tenants have not allocated.

The program sees the partition's SM count where it asks the driver for the
device's multiprocessor count, as it would under MPS percentages, so that
libraries size their grids to the partition (--all-sms: the whole GPU's).
Libraries read it once: after 'carve set' a program keeps the count it saw.

If carve's MPS daemon runs ('carve mps start'), the program joins it and
co-runs with other partitioned programs; otherwise it time-slices with them.
Under MPS a GPU fault in any client ends the work of every client of the
server: --no-mps keeps the program out of MPS in a context of its own, where
no other tenant's fault reaches it, at the price of time-slicing with MPS's
work (see carve ls for faults). run replaces itself with COMMAND, so
COMMAND's exit status is carve's.

If the hook cannot be installed (unknown driver interface or descriptor
version) the program is stopped with exit status 86 rather than run on all
TPCs, unless --allow-unpartitioned is given. A --shim (or $CARVE_SHIM) that
is not carve's libcarve.so, of this carve's version, is refused with exit
status 86 before the program starts.`,
		Args: needArgs("a command"),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := tide.policy()
			if err != nil {
				return err
			}
			s, err := spec.parse()
			if all, ok := place.DefaultSpec(policy); ok && errors.Is(err, errUnnamed) {
				s, err = all, nil
			}
			if err != nil && !errors.Is(err, errUnnamed) {
				return err
			}
			if err := unnamed(devices, err); err != nil {
				return err
			}
			if connections < 1 || connections > mps.MaxConnections {
				return fmt.Errorf("--connections %d: want 1 to %d", connections, mps.MaxConnections)
			}
			path, err := exec.LookPath(args[0])
			if err != nil {
				return err
			}
			lib, err := preload.Find(shim)
			if errors.Is(err, preload.ErrNotShim) {
				return &exitError{preload.ExitRefused, err}
			} else if err != nil {
				return err
			}
			on, ords, err := gpus(devices, s, err)
			if err != nil {
				return err
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			var flags uint32
			if allowUnpartitioned {
				flags |= ctl.FlagAllowUnpartitioned
			}
			if allSMs {
				flags |= ctl.FlagAllSMs
			}
			env := os.Environ()
			d := mps.Default()
			timeSliced := false // said once placed: any error comes before a note
			switch {
			case noMPS:
				env = preload.Set(env, d.OutsideEnv()...)
			case d.Running():
				env = preload.Set(env, d.ClientEnv(connections)...)
				flags |= ctl.FlagMPS
			default:
				timeSliced = true
			}
			p, err := place.Place(dir, on[0].Topo, place.Request{Spec: on[0].Spec, PID: os.Getpid(), Share: spec.share, Flags: flags,
				Policy: policy, Comm: args, More: on[1:]})
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			if !quiet {
				if p.LockHeld != "" {
					note(cmd, "the placement lock is held by %s for over %v: placed without it, as root's record of it will say", p.LockHeld, place.PassOver)
				}
				if timeSliced {
					note(cmd, "carve's MPS daemon is not running, so this program will time-slice "+
						"with other GPU programs instead of co-running; start it with 'carve mps start'")
				}
				for _, o := range p.Overlaps {
					note(cmd, "%s; they are shared", o)
				}
				memNotes(cmd, p.Memory, flags&ctl.FlagMPS != 0)
				fmt.Fprintf(stderr, "carve: pid %d on %s%s\n", os.Getpid(), placedText(p, on, ords), memText(p.Memory))
			}
			if !ctl.WritesNodes(dir) { // root's carve daemon records and seats it: its shim looks once
				e := ctl.Entry{Snapshot: p.Block.Snapshot(), Path: p.Block.Path}
				left, recorded := place.AwaitSeats(dir, e, time.Sleep)
				if err := place.Fresh(dir); !recorded && err != nil { // the daemon stopped meanwhile
					p.Block.Remove()
					return err
				}
				if err := place.Lost(dir, e, spec.share, p.LockHeld != ""); err != nil { // a race lost: others believe its TPCs another's
					p.Block.Remove()
					return err
				}
				if w := place.SeatWarning(dir, policy.Class, left, recorded); w != "" && !quiet {
					fmt.Fprintf(stderr, "carve: warning: %s\n", w)
				}
			}
			if flags&ctl.FlagMPS != 0 && p.Memory.Limit > 0 { // the driver's backstop, for the GPU as the program sees it
				env = preload.Set(env, mps.PinnedMemLimits(ords, p.Memory.Limit))
			}
			touchAfter(cmd, env, p.Block.Path, flags, quiet)
			env = preload.Env(env, lib, dir, p.Block.Path)
			err = syscall.Exec(path, args, env)
			p.Block.Remove()
			return fmt.Errorf("exec %s: %w", path, err)
		},
	}
	spec.add(c)
	tide.add(c)
	c.Flags().StringVar(&shim, "shim", "", "path of libcarve.so (default: beside the carve binary, or $CARVE_SHIM)")
	c.Flags().StringArrayVar(&devices, "device", nil, partition.DevicesUsage)
	c.Flags().BoolVar(&allowUnpartitioned, "allow-unpartitioned", false, "run on all TPCs if the partition cannot be enforced")
	c.Flags().BoolVar(&allSMs, "all-sms", false, "report the whole GPU's SM count to the program, not the partition's")
	c.Flags().BoolVar(&noMPS, "no-mps", false, "keep the program out of MPS: its own context, outside MPS's fault domain, time-sliced with MPS's work")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing before running the program")
	c.Flags().IntVar(&connections, "connections", mps.DefaultConnections,
		"CUDA_DEVICE_MAX_CONNECTIONS under MPS: fewer start faster (2: about 90 ms sooner on an H100) but serialize streams")
	return c
}
