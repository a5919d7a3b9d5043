package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// specFlags are the three ways to name a partition; exactly one is given.
type specFlags struct{ tpcs, gpcs, count string }

func (f *specFlags) add(c *cobra.Command) {
	c.Flags().StringVarP(&f.tpcs, "tpcs", "t", "", `logical TPCs, e.g. "0-15,20", or "all"`)
	c.Flags().StringVarP(&f.gpcs, "gpcs", "g", "", `whole GPCs, e.g. "2,3"`)
	c.Flags().StringVarP(&f.count, "count", "n", "", `a number of TPCs ("20") or a share ("50%"), placed GPC-packed`)
}

func (f *specFlags) parse() (partition.Spec, error) {
	given := 0
	for _, s := range []string{f.tpcs, f.gpcs, f.count} {
		if s != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return partition.Spec{}, errors.New("name a partition with one of -t, -g or -n")
	case given > 1:
		return partition.Spec{}, errors.New("-t, -g and -n exclude each other: give one")
	case f.tpcs != "":
		return partition.ParseTPCs(f.tpcs)
	case f.gpcs != "":
		return partition.ParseGPCs(f.gpcs)
	}
	return partition.ParseCount(f.count)
}

// others lists the live partitioned processes other than pid, with the
// logical TPCs of each on t.
type other struct {
	entry ctl.Entry
	set   partition.Set
}

func othersOn(dir string, t *topo.Topology, pid int) ([]other, error) {
	entries, err := ctl.List(dir)
	if err != nil {
		return nil, err
	}
	var out []other
	for _, e := range entries {
		if e.PID == pid || topo.Mask(e.Live) != t.Live() {
			continue
		}
		out = append(out, other{e, partition.FromMask(t, topo.Mask(e.Mask))})
	}
	return out, nil
}

// place resolves the spec for process pid on t, around the TPCs of the
// other partitioned processes, and returns the set, its mask and the others.
func place(s partition.Spec, t *topo.Topology, dir string, pid int) (partition.Set, topo.Mask, []other, error) {
	others, err := othersOn(dir, t, pid)
	if err != nil {
		return nil, topo.Mask{}, nil, err
	}
	var busy []int
	for _, o := range others {
		busy = append(busy, o.set...)
	}
	set, err := s.Resolve(t, partition.Of(busy))
	if err != nil {
		return nil, topo.Mask{}, nil, err
	}
	mask, err := partition.Mask(t, set)
	return set, mask, others, err
}

// warnOverlaps says which other processes share TPCs with set: allowed, but
// those TPCs are then time-shared.
func warnOverlaps(w io.Writer, set partition.Set, others []other) {
	for _, o := range others {
		if common := set.Intersect(o.set); len(common) > 0 {
			fmt.Fprintf(w, "carve: note: TPCs %s are also in the partition of pid %d (%s); they will be shared\n",
				common, o.entry.PID, commandLine(o.entry.Command, 40))
		}
	}
}

func commandLine(args []string, width int) string {
	s := strings.Join(args, " ")
	if len(s) > width {
		s = s[:width-3] + "..."
	}
	if s == "" {
		s = "?"
	}
	return s
}

// findShim locates libcarve.so: --shim, $CARVE_SHIM, or beside the carve
// binary (bin/ or ../lib/carve/).
func findShim(flag string) (string, error) {
	for _, p := range []string{flag, os.Getenv("CARVE_SHIM")} {
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("shim %s: %w", p, err)
			}
			return filepath.Abs(p)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(dir, "libcarve.so"), filepath.Join(dir, "..", "lib", "carve", "libcarve.so")} {
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("libcarve.so not found beside %s: build it with 'make', or pass --shim", exe)
}

func newRunCmd() *cobra.Command {
	var spec specFlags
	var shim string
	var device, connections int
	var allowUnpartitioned, quiet bool
	c := &cobra.Command{
		Use:   "run (-t TPCS | -g GPCS | -n COUNT) [flags] -- COMMAND [ARGS...]",
		Short: "Run an unmodified CUDA program inside a TPC partition",
		Long: `run starts COMMAND with every kernel it (and its child processes) launches
confined to the given TPCs. The program needs no change: libcarve.so is
preloaded and applies the partition to each kernel launch in the driver.

If carve's MPS daemon runs ('carve mps start'), the program joins it and
co-runs with other partitioned programs; otherwise it time-slices with them.
The partition can be changed while it runs with 'carve set'. run replaces
itself with COMMAND, so COMMAND's exit status is carve's.

If the hook cannot be installed (unknown driver interface or descriptor
version) the program is stopped with exit status 86 rather than run on all
TPCs, unless --allow-unpartitioned is given.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := spec.parse()
			if err != nil {
				return err
			}
			if connections < 1 || connections > mps.MaxConnections {
				return fmt.Errorf("--connections %d: want 1 to %d", connections, mps.MaxConnections)
			}
			path, err := exec.LookPath(args[0])
			if err != nil {
				return err
			}
			lib, err := findShim(shim)
			if err != nil {
				return err
			}
			t, _, err := loadTopology(device, false)
			if err != nil {
				return err
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			set, mask, others, err := place(s, t, dir, os.Getpid())
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			if !quiet {
				warnOverlaps(stderr, set, others)
			}
			env := os.Environ()
			d := mps.Default()
			if d.Running() {
				env = setEnv(env, d.ClientEnv(connections)...)
			} else if !quiet {
				fmt.Fprintln(stderr, "carve: note: carve's MPS daemon is not running, so this program will time-slice "+
					"with other GPU programs instead of co-running; start it with 'carve mps start'")
			}
			var flags uint32
			if allowUnpartitioned {
				flags |= ctl.FlagAllowUnpartitioned
			}
			h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Mask: mask, Live: t.Live(), Flags: flags, Comm: args})
			if err != nil {
				return err
			}
			preload := lib
			if old := os.Getenv("LD_PRELOAD"); old != "" {
				preload += ":" + old
			}
			env = setEnv(env, "LD_PRELOAD="+preload, "CARVE_CTL_DIR="+dir, "CARVE_CTL_ROOT="+h.Path)
			if !quiet {
				fmt.Fprintf(stderr, "carve: pid %d on TPCs %s (%d of %d)\n", os.Getpid(), set, len(set), len(t.TPCs))
			}
			err = syscall.Exec(path, args, env)
			h.Remove()
			return fmt.Errorf("exec %s: %w", path, err)
		},
	}
	spec.add(c)
	c.Flags().StringVar(&shim, "shim", "", "path of libcarve.so (default: beside the carve binary, or $CARVE_SHIM)")
	c.Flags().IntVar(&device, "device", 0, "GPU ordinal")
	c.Flags().BoolVar(&allowUnpartitioned, "allow-unpartitioned", false, "run on all TPCs if the partition cannot be enforced")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing before running the program")
	c.Flags().IntVar(&connections, "connections", mps.DefaultConnections,
		"CUDA_DEVICE_MAX_CONNECTIONS under MPS: fewer start faster (2: about 90 ms sooner on an H100) but serialize streams")
	return c
}

// setEnv sets each KEY=VALUE in env, replacing earlier values.
func setEnv(env []string, kvs ...string) []string {
	for _, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		out := env[:0:0]
		for _, e := range env {
			if ek, _, _ := strings.Cut(e, "="); ek != k {
				out = append(out, e)
			}
		}
		env = append(out, kv)
	}
	return env
}
