package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
)

// procInfo is one row of 'carve ls'.
type procInfo struct {
	PID        int      `json:"pid"`
	Command    []string `json:"command"`
	TPCs       string   `json:"tpcs"` // logical, or "mask:<hex>" when no topology is cached
	NumTPCs    int      `json:"num_tpcs"`
	Launches   uint64   `json:"launches"`
	LastLaunch string   `json:"last_launch,omitempty"` // RFC 3339
	State      string   `json:"state"`
	Refused    uint64   `json:"refused_masks"`
	Applied    bool     `json:"current_mask_applied"` // the last launch used the newest mask
}

var stateNames = map[uint32]string{
	ctl.StateNew: "starting", ctl.StateHooked: "partitioned",
	ctl.StateUnhooked: "UNPARTITIONED", ctl.StateNoDriver: "no-driver",
}

func describe(e ctl.Entry) procInfo {
	p := procInfo{PID: e.PID, Command: e.Command, Launches: e.Launches, State: stateNames[e.State],
		Refused: e.Refused, Applied: e.AppliedGen == e.Gen}
	if !e.LastLaunch.IsZero() {
		p.LastLaunch = e.LastLaunch.UTC().Format(time.RFC3339Nano)
	}
	live := topo.Mask(e.Live)
	if t, _ := topo.FindCached(live); t != nil {
		set := partition.FromMask(t, topo.Mask(e.Mask))
		p.TPCs, p.NumTPCs = set.String(), len(set)
	} else {
		p.TPCs = "mask:" + topo.Mask(e.Mask).String()
		p.NumTPCs = topo.Mask(e.Mask).Not().And(live).Count()
	}
	return p
}

func newLsCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "ls",
		Short: "List partitioned processes",
		Long: `ls lists the running processes that carve partitions (this user's): pid,
command, logical TPCs, kernel launches so far and the time of the last one.
Entries of processes that have exited are removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			dir, err := ctl.Dir()
			if err != nil {
				return err
			}
			entries, err := ctl.List(dir)
			if err != nil {
				return err
			}
			rows := make([]procInfo, 0, len(entries))
			for _, e := range entries {
				rows = append(rows, describe(e))
			}
			if out == "json" {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			printProcs(cmd.OutOrStdout(), rows, time.Now())
			return nil
		},
	}
	addOutputFlag(c, &out)
	return c
}

func printProcs(w io.Writer, rows []procInfo, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no partitioned processes")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tTPCS\tN\tLAUNCHES\tLAST LAUNCH\tSTATE\tCOMMAND")
	for _, r := range rows {
		last := "-"
		if t, err := time.Parse(time.RFC3339Nano, r.LastLaunch); err == nil {
			last = now.Sub(t).Round(time.Millisecond).String() + " ago"
		}
		state := r.State
		if !r.Applied && r.Launches > 0 {
			state += " (new mask from next launch)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\n", r.PID, r.TPCs, r.NumTPCs, r.Launches, last, state, commandLine(r.Command, 60))
	}
	tw.Flush()
}
