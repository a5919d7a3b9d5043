// carve top: carve ls again every --interval, with what changed over it.

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/daemon"
	"github.com/carve-gpu/carve/internal/status"
)

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
