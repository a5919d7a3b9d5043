// carve daemon: the node's controller, carve's MPS daemon, cleanup of ended
// tenants, the SLO controller and metrics, until stopped.

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/daemon"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/slo"
	"github.com/carve-gpu/carve/internal/topo"
)

func newDaemonCmd() *cobra.Command {
	o := daemon.Options{}
	var noMPS bool
	c := &cobra.Command{
		Use:   "daemon",
		Short: "Run the node's controller: carve's MPS daemon, cleanup of ended tenants, LS tenants' SLOs, metrics",
		Long: `daemon runs until stopped (SIGINT or SIGTERM): it starts carve's MPS daemon if
it is not running, frees the node-block slots of LS tenants that died, and
serves what the partitioned processes are doing: Prometheus metrics on
/metrics and the rows of carve ls as JSON on /status, on --listen
(default 127.0.0.1, this host only), without authentication. Tenants'
command lines are left out of both unless --show-commands is given.

In the node directory (carve node init) root's daemon alone writes the
GPUs' node blocks: looking over the directory every 100ms, it records each
user's tenant of carve run (its class and SLO, root's record in .tenants,
which seating and the SLO controller believe, not what its blocks say
later) and seats every user's LS tenants; a user's carve run --ls or --be
waits for its record and seat.

When it stops, MPS runs on, so that a restart or a rolling upgrade takes no
running tenant off MPS; the next daemon adopts the MPS daemon it finds in
carve's pipe directory instead of starting another. carve mps stop ends MPS
(its clients must have exited); --stop-mps-on-exit makes the daemon stop MPS,
the one it started or adopted, when it ends. For each process of a claim
under carve's MPS (carve-dra) it starts carve mps touch --after its block,
as carve run does for its tenant, so that none stays MPS's newest client,
which MPS runs slower; a claim whose processes run as another user than the
daemon's is not touched.

The SLO controller runs here: every --slo-interval (100ms) it reads the busy
periods and busy time of each LS tenant with an SLO (carve run --slo, a claim
config's slo) and, GPU by GPU, sets the share and queue of the BE tenants
there so that its estimate of the requests' p99 over the last ` + strconv.Itoa(slo.WindowSteps) + `
intervals (the periods' p99 plus a queue's wait at the tenant's
utilization) stays under each SLO: it moves the BE tenants' share toward
the utilization at which the estimate is 85% of the target, the LS tenant
furthest over that binding, halves it at once when an estimate is far over
or a tenant saturated, and gives all to the BE tenants when no LS
tenant has had work for that long. One controller steers a runtime
directory (the lock .slo.lock); another waits, and says so once. What a BE asked is kept in its block and
given back once no SLO binds it. With no SLO set it changes nothing.

It is not on any kernel launch's path: LS and BE tenants share the GPU
through the node block, placements are atomic without it, and tenants run on
if it stops, the BE tenants at the share and queue it last set. It keeps no
state of its own, so a restart serves the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			o.Dir = dir
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if ctl.Shared(dir) && ctl.WritesNodes(dir) { // root's, in the node directory
				o.GPUs = gpuMemory(o.Log)
			}
			if noMPS && o.StopMPS {
				return errors.New("--no-mps and --stop-mps-on-exit exclude each other")
			}
			if !noMPS {
				d := mps.Default()
				o.MPS = &d
				if self, err := os.Executable(); err == nil { // each touch finds d as this process does
					o.Touch = func(block string) error { return mps.StartTouch(self, block, os.Environ()) }
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return daemon.Run(ctx, o)
		},
	}
	c.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:9400", "address of /metrics and /status")
	c.Flags().DurationVar(&o.Interval, "interval", time.Second, "how often ended tenants are cleaned up (10ms to 1h)")
	c.Flags().DurationVar(&o.SLOInterval, "slo-interval", 100*time.Millisecond, fmt.Sprintf("how often the SLO controller steps (10ms to 1s; its window is %d of them)", slo.WindowSteps))
	c.Flags().BoolVar(&noMPS, "no-mps", false, "leave MPS alone")
	c.Flags().BoolVar(&o.ShowCommands, "show-commands", false, "serve tenants' command lines in /status and the metrics' command label (default: left out)")
	c.Flags().BoolVar(&o.StopMPS, "stop-mps-on-exit", false, "stop MPS when the daemon ends (default: MPS runs on for its clients)")
	return c
}

// gpuMemory are the node's GPUs, each its UUID and memory as the driver
// says (cuDeviceTotalMem, which makes no context), which root's daemon
// judges a tenant's first memory limit against in the node directory
// (daemon.Options.GPUs); where the driver cannot say, those it told of,
// and the log says why.
func gpuMemory(log *slog.Logger) []*topo.Topology {
	err := cuda.Load()
	n := 0
	if err == nil {
		n, err = cuda.DeviceCount()
	}
	var out []*topo.Topology
	for i := 0; err == nil && i < n; i++ {
		var d cuda.Device
		t := &topo.Topology{}
		if d, err = cuda.GetDevice(i); err == nil {
			if t.UUID, err = d.UUID(); err == nil {
				t.MemoryBytes, err = d.TotalMem()
			}
		}
		if err == nil {
			out = append(out, t)
		}
	}
	if err != nil {
		log.Warn("the GPUs' memory is not known: in the node directory a tenant's memory limit is recorded as its block says", "err", err)
	}
	return out
}
