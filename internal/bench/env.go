// The environment the benchmarks of separate processes share (Env): the
// GPU's topology, this carve binary and its shim, an MPS daemon of their
// own, and the command prefixes that run a worker through them.

package bench

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/preload"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/topo"
)

// Env is what the benchmarks of separate processes share: the GPU's
// topology, this carve binary and its shim, and an MPS daemon of their own
// in a temporary directory (Close stops it).
type Env struct {
	Topo      *topo.Topology
	Device    int
	Exe, Shim string
	MPS       mps.Daemon
}

// NewEnv finds device's topology and carve's shim and starts an MPS daemon.
func NewEnv(device int) (*Env, error) {
	t, _, err := discover.Topology(device, false)
	if err != nil {
		return nil, err
	}
	shim, err := preload.Find("")
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "carve-bench-mps-")
	if err != nil {
		return nil, err
	}
	e := &Env{Topo: t, Device: device, Exe: exe, Shim: shim, MPS: mps.Daemon{Root: root}}
	if err := e.MPS.Start(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return e, nil
}

// Close stops the MPS daemon and removes its directory.
func (e *Env) Close() {
	e.MPS.Stop()
	os.RemoveAll(e.MPS.Root)
}

// CarveRun is the command prefix that runs a program in set through carve.
func (e *Env) CarveRun(set partition.Set) []string { return e.Run("-t", set.String()) }

// Run is the command prefix that runs a program through carve run with
// these flags (a partition, a tide class and its policy).
func (e *Env) Run(flags ...string) []string {
	return append(append([]string{e.Exe, "run", "-q", "--shim", e.Shim, "--device", strconv.Itoa(e.Device)}, flags...), "--")
}

// MPSEnv is the environment of an MPS client of the daemon, plus extra.
func (e *Env) MPSEnv(extra ...string) []string {
	return append(e.MPS.ClientEnv(mps.DefaultConnections), extra...)
}

// Split packs a share of the TPCs GPC-packed and the rest beside it.
func (e *Env) Split(share float64) (a, b partition.Set) {
	k := int(math.Round(share * float64(len(e.Topo.TPCs))))
	a = partition.Pack(e.Topo, k, nil)
	return a, partition.Pack(e.Topo, len(e.Topo.TPCs)-k, a)
}

// Worker is the argv of one of carve's hidden worker commands
// ("bench", name, args...) on this env's device.
func (e *Env) Worker(name string, args ...string) []string {
	return append([]string{e.Exe, "bench", name, fmt.Sprintf("--device=%d", e.Device)}, args...)
}

// newResult starts the result of benchmark name on t, dated now.
func newResult(name string, t *topo.Topology, params map[string]any) *report.Result {
	return &report.Result{Benchmark: name, Device: t.Device, UUID: t.UUID, Driver: t.Driver,
		Date: time.Now().UTC().Format(time.RFC3339), Params: params}
}

// Progress reports done of total steps; nil reports nothing.
type Progress func(done, total int)

func (p Progress) report(done, total int) {
	if p != nil {
		p(done, total)
	}
}

// checkShare checks a fraction of the GPU given on the command line.
func checkShare(flag string, share float64) error {
	if share <= 0 || share >= 1 {
		return fmt.Errorf("--%s %g: want a fraction between 0 and 1", flag, share)
	}
	return nil
}
