package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/daemon"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/status"
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

func newTopCmd() *cobra.Command {
	var interval time.Duration
	var count int
	c := &cobra.Command{
		Use:   "top",
		Short: "Partitioned processes, live: launches per second, LS busy and BE held-back shares",
		Long: `top shows carve ls again every --interval with what changed over it: each
process's kernel launches per second, an LS tenant's share of the time with
work in flight, a BE tenant's share of the time its launches were held back
and its kernels in flight. --count stops after that many frames.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := daemon.CheckInterval("--interval", interval); err != nil {
				return err
			}
			if count < 0 {
				return errors.New("--count: at least 0")
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			tty := term.IsTerminal(int(os.Stdout.Fd()))
			prev, err := status.List(dir, nil)
			if err != nil {
				return err
			}
			last := time.Now()
			for frame := 0; count == 0 || frame < count; frame++ {
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
				cur, err := status.List(dir, nil)
				if err != nil {
					return err
				}
				now := time.Now()
				if tty {
					fmt.Fprint(cmd.OutOrStdout(), "\x1b[H\x1b[2J")
				}
				status.WriteTop(cmd.OutOrStdout(), cur, status.Between(prev, cur, now.Sub(last)), now, now.Sub(last))
				prev, last = cur, now
			}
			return nil
		},
	}
	c.Flags().DurationVar(&interval, "interval", time.Second, "time between frames (10ms to 1h)")
	c.Flags().IntVar(&count, "count", 0, "frames to show (0: until interrupted)")
	return c
}
