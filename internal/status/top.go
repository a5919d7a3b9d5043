// carve top's frame: what changed for each process between two listings,
// printed as rates over the interval, and an LS tenant's busy periods
// that ended in it.

package status

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Rates are what changed for one process between two listings.
type Rates struct {
	Launches float64  // per second
	Busy     float64  // LS: share of the time with work in flight
	Held     float64  // BE: share of the time a launch waited
	BWHeld   float64  // with a bandwidth share: share of the time a launch waited for its slot
	BWBusy   float64  // and share of the time its kernels ran, as its gate measured it (its share's use)
	DRAM     float64  // with a kernel table: its launches' DRAM bytes by it, GB/s
	Periods  *Periods // LS: the busy periods that ended in the interval
	Marked   *Marked  // LS with a mark: the requests it marked that ended in the interval
}

// Between computes each process's rates from two listings dt apart.
func Between(prev, cur []Row, dt time.Duration) map[int]Rates {
	before := map[int]Row{}
	for _, r := range prev {
		before[r.PID] = r
	}
	out := map[int]Rates{}
	for _, r := range cur {
		p, ok := before[r.PID]
		if !ok || dt <= 0 || r.Ended {
			continue
		}
		var x Rates
		x.Launches = float64(r.Launches-p.Launches) / dt.Seconds()
		if r.Kernels != nil && p.Kernels != nil {
			x.DRAM = float64(r.Kernels.Bytes-p.Kernels.Bytes) / dt.Seconds() / 1e9
		}
		if r.BW != nil && p.BW != nil {
			x.BWHeld = float64(r.BW.Held-p.BW.Held) / float64(dt)
			x.BWBusy = float64(r.BW.Busy-p.BW.Busy) / float64(dt)
		}
		if r.Tide != nil && p.Tide != nil {
			x.Busy = float64(r.Tide.Busy-p.Tide.Busy) / float64(dt)
			x.Held = float64(r.Tide.Held-p.Tide.Held) / float64(dt)
			if r.Class == "ls" {
				var s ctl.SLO
				if r.Periods != nil {
					s = r.Periods.SLO
				}
				x.Periods = periodsBetween(p.Tide, r.Tide, s)
				if r.Marked != nil {
					x.Marked = MarkedOf(r.Marked.Mark, *r.Tide, r.Tide.Marked.Sub(p.Tide.Marked), s)
				}
			}
		}
		out[r.PID] = x
	}
	return out
}

// WriteTop prints one frame of carve top: each live process with its
// rates over the last interval.
func WriteTop(w io.Writer, rows []Row, rates map[int]Rates, now time.Time, dt time.Duration) {
	fmt.Fprintf(w, "carve top  %s  (rates over %v)\n\n", now.Format("15:04:05"), dt.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tCLASS\tGPU\tTPCS\tN\tMEM\tLAUNCHES/S\tLS BUSY\tLS P50/P99\tLS SLO/WITHIN\tLS REQ P50/P99\tBE HELD\tBE IN FLIGHT\tBW/USED/HELD\tDRAM GB/S\tSTATE\tCOMMAND")
	n := 0
	for _, r := range rows {
		if r.Ended || r.Unreadable != nil {
			continue
		}
		n++
		x := rates[r.PID]
		busy, quant, within, req, held, infl := "-", "-", "-", "-", "-", "-"
		switch r.Class {
		case "ls":
			busy = fmt.Sprintf("%.0f%%", 100*x.Busy)
			quant, within, req = x.Periods.Quantiles(), x.Periods.SLOText(), x.Marked.Quantiles()
		case "be":
			held = fmt.Sprintf("%.0f%%", 100*x.Held)
			if r.Tide != nil {
				infl = fmt.Sprint(r.Tide.Inflight)
			}
		}
		state := r.State
		if r.Fault != nil {
			state = "FAULT " + r.Fault.Name
		}
		state += Elsewhere(r) + Refused(r)
		bw := "-"
		if r.BW != nil {
			bw = fmt.Sprintf("%s/%.2f/%.0f%%", r.BW.ShareText(), x.BWBusy, 100*x.BWHeld)
		}
		dram := "-"
		if r.Kernels != nil {
			dram = fmt.Sprintf("%.1f", x.DRAM)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.PID, orDash(r.Class), ShortGPU(r.GPU), r.TPCs, r.NumTPCs,
			MemText(r), x.Launches, busy, quant, within, req, held, infl, bw, dram, state, Command(r, 40))
		for _, g := range MoreParts(r) {
			fmt.Fprintf(tw, "\t\t%s\t%s\t%d\t\t\t\t\t\t\t\t\t\t\t\t\n", ShortGPU(g.GPU), g.TPCs, g.NumTPCs)
		}
	}
	tw.Flush()
	if n == 0 {
		fmt.Fprintln(w, "no partitioned processes")
	}
}
