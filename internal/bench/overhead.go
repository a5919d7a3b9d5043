// carve bench overhead: what each mechanism (none, carve, MPS, MPS with a
// percentage, carve under MPS, a green context) costs a process, measured
// in worker processes, with its plot and table.

package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/workload"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// The quantities the overhead benchmark reports, as point labels.
const (
	labelLatency = "launch latency (launch call to kernel start)"
	labelHost    = "host time in the launch call"
	labelStartup = "startup (exec to first kernel start)"
)

// OverheadOptions are carve bench overhead's flags.
type OverheadOptions struct {
	Launches, Rounds, Starts, CPU int
	Share                         float64 // of the GPU, for the partitions
	Progress                      Progress
}

// Check rejects options that cannot run, before the GPU is asked.
func (o OverheadOptions) Check() error {
	if o.Launches < 1 || o.Rounds < 1 || o.Starts < 1 {
		return errors.New("--launches, --rounds and --starts: want at least 1")
	}
	if err := checkShare("share", o.Share); err != nil {
		return err
	}
	if o.CPU < 0 || o.CPU >= runtime.NumCPU() {
		return fmt.Errorf("--cpu %d: this machine has CPUs 0-%d", o.CPU, runtime.NumCPU()-1)
	}
	return nil
}

// Overhead measures, in worker processes, for each mechanism (none; carve;
// MPS; MPS with an active-thread percentage; carve under MPS; a green
// context; an LS and a BE tenant of carve tide, alone): the launch latency
// from just before cuLaunchKernel to the kernel's first instruction (the
// GPU's %globaltimer related to the host clock), the host time of the
// launch call, and the startup from just before exec to the first kernel's
// start. Launch workers run in rounds
// that alternate the mechanisms, each pinned to o.CPU.
func Overhead(e *Env, o OverheadOptions) (*report.Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	launches, rounds, starts, cpu, share, device := o.Launches, o.Rounds, o.Starts, o.CPU, o.Share, e.Device
	set, _ := e.Split(share)
	pct := fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%.0f", 100*share)
	green := fmt.Sprintf("--green-share=%g", share)
	type setup struct {
		Setup
		args []string
	}
	setups := []setup{
		{Setup: Setup{Mechanism: "none"}},
		{Setup: Setup{Mechanism: fmt.Sprintf("carve %d TPCs", len(set)), VictimPrefix: e.CarveRun(set)}},
		{Setup: Setup{Mechanism: "MPS", VictimEnv: e.MPSEnv()}},
		{Setup: Setup{Mechanism: fmt.Sprintf("MPS %.0f%%", 100*share), VictimEnv: e.MPSEnv(pct)}},
		{Setup: Setup{Mechanism: fmt.Sprintf("carve %d TPCs + MPS", len(set)), VictimPrefix: e.CarveRun(set), VictimEnv: e.MPSEnv()}},
		{Setup: Setup{Mechanism: "green context"}, args: []string{green}},
		{Setup: Setup{Mechanism: fmt.Sprintf("carve LS tenant, %d TPCs", len(set)), VictimPrefix: e.Run("--ls", "-t", set.String())}},
		// unbounded: with bounds, its cost depends on when an LS tenant last ran (see carve run)
		{Setup: Setup{Mechanism: "carve BE tenant, no bounds", VictimPrefix: e.Run("--be", "--inflight=0", "--queue=0")}},
	}
	w := Workers{Exe: e.Exe}
	dev := fmt.Sprintf("--device=%d", device)
	step, total := 0, len(setups)*(rounds+1+starts)
	lat := make([][]float64, len(setups))
	host := make([][]float64, len(setups))
	boot := make([][]float64, len(setups))
	for range rounds {
		for i, s := range setups {
			var ls workload.LaunchSamples
			argv := append([]string{e.Exe, "bench", "__launch", fmt.Sprintf("--n=%d", launches), fmt.Sprintf("--cpu=%d", cpu), dev}, s.args...)
			if err := w.Victim(s.Setup, &ls, argv...); err != nil {
				return nil, fmt.Errorf("launches, %s: %w", s.Mechanism, err)
			}
			for j := range ls.LatencyNS {
				lat[i] = append(lat[i], ls.LatencyNS[j]/1e3)
				host[i] = append(host[i], ls.HostNS[j]/1e3)
			}
			step++
			o.Progress.report(step, total)
		}
	}
	first := func(s setup) (float64, error) {
		var f struct {
			NS int64 `json:"first_kernel_ns"`
		}
		argv := append([]string{e.Exe, "bench", "__first", dev}, s.args...)
		t0 := time.Now().UnixNano()
		if err := w.Victim(s.Setup, &f, argv...); err != nil {
			return 0, fmt.Errorf("startup, %s: %w", s.Mechanism, err)
		}
		return float64(f.NS-t0) / 1e6, nil
	}
	for _, s := range setups { // once each first: the MPS server starts, caches fill
		if _, err := first(s); err != nil {
			return nil, err
		}
		step++
		o.Progress.report(step, total)
	}
	for range starts {
		for i, s := range setups {
			ms, err := first(s)
			if err != nil {
				return nil, err
			}
			boot[i] = append(boot[i], ms)
			step++
			o.Progress.report(step, total)
		}
	}
	r := newResult("overhead", e.Topo, map[string]any{"launches": launches, "rounds": rounds, "starts": starts, "share": share,
		"carve_tpcs": set.String(), "cpu": cpu, "mps_connections": e.MPSEnv()})
	for i, s := range setups {
		r.Series = append(r.Series, report.Series{Mechanism: s.Mechanism, Measured: true, Points: []report.Point{
			{Label: labelLatency, Unit: "us", Stats: stats.Summarize(lat[i])},
			{Label: labelHost, Unit: "us", Stats: stats.Summarize(host[i])},
			{Label: labelStartup, Stats: stats.Summarize(boot[i])},
		}})
	}
	return r, nil
}

// plotOverhead draws one panel per measured quantity (the points' labels)
// with a box per mechanism, to DIR/overhead.{png,svg}.
func plotOverhead(r *report.Result, dir string) error {
	var labels []string
	for _, s := range r.Series {
		for _, pt := range s.Points {
			labels = report.AddNew(labels, pt.Label)
		}
	}
	var panels []*plot.Plot
	for _, l := range labels {
		p := plot.New()
		p.Title.Text = l
		var names []string
		var sts []stats.Stats
		for _, s := range r.Series {
			for _, pt := range s.Points {
				if pt.Label == l {
					names = append(names, s.Mechanism)
					sts = append(sts, pt.Stats)
					p.Y.Label.Text = cmp.Or(pt.Unit, "ms")
				}
			}
		}
		if err := report.Boxes(p, names, sts); err != nil {
			return err
		}
		lo, hi := math.Inf(1), 0.0
		for _, st := range sts {
			lo, hi = min(lo, st.Min), max(hi, st.Max)
		}
		if lo > 0 && hi > 5*lo { // rare slow launches would flatten the boxes
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Title.Text += " (log scale)"
		}
		panels = append(panels, p)
	}
	return report.SavePanels(panels, len(panels), 6*vg.Inch, 6*vg.Inch, filepath.Join(dir, r.Benchmark))
}

func overheadTable(tw io.Writer, r *report.Result) {
	if len(r.Series) == 0 {
		return
	}
	none := r.Series[0]
	for k, p := range none.Points {
		fmt.Fprintf(tw, "%s (%s)\nMECHANISM\tN\tMIN\tP50\tP99\tMAX\tMEAN\tP50 VS %s\tMEAN VS %[3]s\n",
			p.Label, cmp.Or(p.Unit, "ms"), none.Mechanism)
		for _, s := range r.Series {
			if k >= len(s.Points) {
				continue
			}
			st, base := s.Points[k].Stats, p.Stats
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%+.1f%%\t%+.1f%%\n", s.Mechanism, st.N, st.Min, st.P50, st.P99, st.Max, st.Mean,
				100*(st.P50/base.P50-1), 100*(st.Mean/base.Mean-1))
		}
	}
}
