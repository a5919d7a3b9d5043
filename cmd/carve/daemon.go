// carve daemon: the node's controller, carve's MPS daemon, cleanup of ended
// tenants and metrics, until stopped.

package main

import (
	"errors"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/daemon"
	"github.com/carve-gpu/carve/internal/mps"
)

func newDaemonCmd() *cobra.Command {
	o := daemon.Options{}
	var noMPS bool
	c := &cobra.Command{
		Use:   "daemon",
		Short: "Run the node's controller: carve's MPS daemon, cleanup of ended tenants, metrics",
		Long: `daemon runs until stopped (SIGINT or SIGTERM): it starts carve's MPS daemon if
it is not running, frees the node-block slots of LS tenants that died, and
serves what the partitioned processes are doing: Prometheus metrics on
/metrics and the rows of carve ls as JSON on /status, on --listen
(default 127.0.0.1, this host only), without authentication. Tenants'
command lines are left out of both unless --show-commands is given.

When it stops, MPS runs on, so that a restart or a rolling upgrade takes no
running tenant off MPS; the next daemon adopts the MPS daemon it finds in
carve's pipe directory instead of starting another. carve mps stop ends MPS
(its clients must have exited); --stop-mps-on-exit makes the daemon stop MPS,
the one it started or adopted, when it ends.

It is not on any kernel launch's path: LS and BE tenants share the GPU
through the node block, placements are atomic without it, and tenants run on
if it stops. It keeps no state of its own, so a restart serves the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			o.Dir = dir
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if noMPS && o.StopMPS {
				return errors.New("--no-mps and --stop-mps-on-exit exclude each other")
			}
			if !noMPS {
				d := mps.Default()
				o.MPS = &d
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return daemon.Run(ctx, o)
		},
	}
	c.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:9400", "address of /metrics and /status")
	c.Flags().DurationVar(&o.Interval, "interval", time.Second, "how often ended tenants are cleaned up (10ms to 1h)")
	c.Flags().BoolVar(&noMPS, "no-mps", false, "leave MPS alone")
	c.Flags().BoolVar(&o.ShowCommands, "show-commands", false, "serve tenants' command lines in /status and the metrics' command label (default: left out)")
	c.Flags().BoolVar(&o.StopMPS, "stop-mps-on-exit", false, "stop MPS when the daemon ends (default: MPS runs on for its clients)")
	return c
}
