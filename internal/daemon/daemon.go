// Package daemon is carve's node controller: it runs carve's MPS daemon
// (and carve mps touch for each process of a claim under it, touch.go),
// frees the node-block slots of LS tenants that died (and the TPCs of
// partitions outside tide that ended, for LS tenants), runs the SLO
// controller (internal/slo), which sets the BE tenants' share and queue to
// keep the LS tenants' SLOs, and serves what the partitioned processes are
// doing as Prometheus metrics (/metrics) and as JSON (/status).
//
// It is not on any launch's path: the shims of LS and BE tenants meet in
// the node block, and a tenant runs on with the daemon gone. MPS too runs
// on when the daemon ends (unless told to stop it), so that a restart, a
// rolling upgrade, takes no tenant off MPS; the next daemon adopts it. Nor does it
// keep state of its own: everything it serves is read from the control
// and node blocks when asked, so a restarted daemon serves the same; the
// SLO controller's dials and what the BE tenants asked are in their
// blocks, and its window of busy periods fills again within a second.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/slo"
	"github.com/carve-gpu/carve/internal/status"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/xid"
)

// Options say what the daemon looks after.
type Options struct {
	Dir      string        // the runtime directory of control and node blocks
	Listen   string        // address of /metrics and /status, e.g. 127.0.0.1:9400
	Interval time.Duration // how often dead tenants' slots are freed: 0 (a second) or MinInterval to MaxInterval
	// SLOInterval is how often the SLO controller steps: 0
	// (slo.DefaultInterval) or MinInterval to a second; its window is
	// slo.WindowSteps of them.
	SLOInterval time.Duration
	MPS         *mps.Daemon // carve's MPS daemon: started, or adopted where it runs; nil: none
	// StopMPS stops MPS when Run returns, started or adopted. Without it
	// MPS runs on for its clients: a restarted daemon adopts it, and only
	// carve mps stop ends it.
	StopMPS bool
	// Touch starts carve mps touch --after the block of a claim's process
	// under MPS (mps.StartTouch); nil: none (toucher).
	Touch func(block string) error
	// ShowCommands serves each tenant's command line (its "command" in
	// /status, its metrics' command label). Without it they are left out:
	// a command line may carry what its tenant would not have read by
	// whoever reaches the daemon's address.
	ShowCommands bool
	// GPUs are the node's GPUs (their UUIDs and memory), which in the node
	// directory a tenant's first record's memory limit must fit (place.Fence:
	// where a GPU's is not known, it is recorded as its block says).
	GPUs  []*topo.Topology
	Log   *slog.Logger
	Ready func(addr string) // called with the address once it listens
}

// CheckEvery is how often the daemon looks over a Shared runtime
// directory (the node directory) for a block that appeared, changed or
// went, and fences it at once where one did (collector.check): there a
// user's carve seats no LS tenant, so one waits for root's daemon to seat
// it before it starts (carve run).
const CheckEvery = 100 * time.Millisecond

// MinInterval and MaxInterval bound Options.Interval, and carve top's
// --interval: shorter would spin a CPU over the blocks, longer leaves
// ended tenants' slots taken for hours.
const (
	MinInterval = 10 * time.Millisecond
	MaxInterval = time.Hour
)

// CheckInterval says why d is not an interval from MinInterval to
// MaxInterval, naming it as flag; nil where it is one.
func CheckInterval(flag string, d time.Duration) error {
	if d < MinInterval || d > MaxInterval {
		return fmt.Errorf("%s %v: want %v to %v", flag, d, MinInterval, MaxInterval)
	}
	return nil
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if err := CheckInterval("--interval", o.Interval); err != nil {
		return err
	}
	if o.SLOInterval == 0 {
		o.SLOInterval = slo.DefaultInterval
	}
	if o.SLOInterval < MinInterval || o.SLOInterval > time.Second {
		return fmt.Errorf("--slo-interval %v: want %v to 1s", o.SLOInterval, MinInterval)
	}
	// the address first: a daemon that cannot serve starts nothing
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return fmt.Errorf("address %q: want HOST:PORT, e.g. 127.0.0.1:9400", o.Listen)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("serving /metrics and /status: %w", err)
	}
	defer ln.Close()
	if o.MPS != nil {
		if err := runMPS(o.MPS, o.Log); err != nil {
			return err
		}
		if o.StopMPS {
			defer func() {
				if err := o.MPS.Stop(); err != nil {
					o.Log.Warn("stopping MPS", "err", err)
				} else {
					o.Log.Info("MPS stopped", "pipe", o.MPS.PipeDir())
				}
			}()
		}
	}
	ctrl := slo.New(o.Dir)
	sloCtx, stopSLO := context.WithCancel(ctx)
	sloDone := make(chan struct{})
	defer func() { stopSLO(); <-sloDone }()
	go func() {
		defer close(sloDone)
		var last string
		ctrl.Run(sloCtx, o.SLOInterval, func(err error) {
			if err.Error() != last { // once, not every step
				o.Log.Warn("SLO controller", "err", err)
				last = err.Error()
			}
		})
	}()
	c := newCollector(o.Dir, o.ShowCommands, ctrl)
	c.gpus = o.GPUs
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		rows, err := status.List(o.Dir, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if !o.ShowCommands {
			for i := range rows {
				rows[i].Command = nil
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(rows)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	o.Log.Info("serving", "addr", ln.Addr().String(), "dir", o.Dir)
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	var checks <-chan time.Time // none where no user's carve needs the daemon to seat
	if c.checks {
		ct := time.NewTicker(CheckEvery)
		defer ct.Stop()
		checks = ct.C
	}
	var touch *toucher
	if o.MPS != nil && o.Touch != nil {
		touch = newToucher(o.Touch, o.Log)
	}
	for pass := true; ; {
		if pass {
			n, claims := c.reclaim()
			if n > 0 {
				o.Log.Info("freed the node slots of LS tenants that ended", "slots", n)
			}
			if touch != nil {
				touch.pass(claims)
			}
		}
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shut)
		case err := <-errs:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return err
		case <-t.C:
			pass = true
		case <-checks:
			c.check()
			pass = false
		}
	}
}

// runMPS adopts the MPS control daemon running in d's pipe directory (its
// pid file names a live process), as a restarted daemon finds the one it
// left to its clients, or else starts one. One that another daemon started
// meanwhile is adopted too.
func runMPS(d *mps.Daemon, log *slog.Logger) error {
	if pid := d.PID(); pid != 0 {
		log.Info("MPS adopted: it runs already", "pipe", d.PipeDir(), "pid", pid)
		answering(d, pid, log)
		return nil
	}
	if err := d.Start(); err != nil {
		if pid := d.PID(); pid != 0 {
			log.Info("MPS adopted: it was started meanwhile", "pipe", d.PipeDir(), "pid", pid)
			return nil
		}
		return fmt.Errorf("starting MPS: %w", err)
	}
	log.Info("MPS started", "pipe", d.PipeDir(), "pid", d.PID())
	return nil
}

// answering warns where the MPS control daemon adopted (pid) does not
// answer a query: CUDA programs connect to it as the query does, so its
// clients fail or wait. It is left running, since its clients may be
// running; the warning says how to replace it.
func answering(d *mps.Daemon, pid int, log *slog.Logger) {
	if _, err := d.Query("get_server_list"); err != nil {
		log.Warn("MPS runs but does not answer: its clients cannot connect; once none runs, stop it (carve mps stop, or kill its pid) and restart carve daemon",
			"pipe", d.PipeDir(), "pid", pid, "err", err)
	}
}

// collector reads the blocks at each scrape.
type collector struct {
	dir          string
	showCommands bool // Options.ShowCommands: the command label is "" without it
	slo          *slo.Controller
	reclaimed    atomic.Int64
	checks       bool             // it checks the directory every CheckEvery (a Shared one it writes the node blocks of)
	seen         string           // what check last saw of the directory (listed)
	gpus         []*topo.Topology // Options.GPUs, whose memory its fences know
}

// newCollector is the collector of dir's blocks, steered by ctrl (nil:
// none), that checks dir every CheckEvery where it is Shared and this
// process writes its node blocks (root's, in the node directory).
func newCollector(dir string, showCommands bool, ctrl *slo.Controller) *collector {
	return &collector{dir: dir, showCommands: showCommands, slo: ctrl, checks: ctl.Shared(dir) && ctl.WritesNodes(dir)}
}

// reclaim frees the slots of LS tenants that no longer run, in every node
// block, removes the control blocks of dead processes, and lets LS tenants
// onto the TPCs of partitions outside tide that ended (place.Fence, which
// in the node directory, as root, seats every user's LS tenants). It
// returns the slots freed and the claims it swept.
func (c *collector) reclaim() (int, []ctl.Claim) {
	nodes, _ := ctl.Nodes(c.dir)
	n := 0
	for _, nd := range nodes {
		n += nd.Reclaim()
		nd.Close()
	}
	// the sweeps of the runtime directory and of each claim's credit what
	// ended processes held back to their memory accounts
	ctl.Scan(c.dir)
	claims, _, _ := ctl.Claims(c.dir)
	if c.checks {
		c.seen = listed(c.dir) // what this fence sees, for check
	}
	place.Fence(c.dir, c.gpus...)
	c.reclaimed.Add(int64(n))
	return n, claims
}

// check fences the directory (place.Fence: seats, fixed TPCs, node
// blocks made and taken over) where its blocks changed since it last
// looked (listed), and says whether they had. It reads the directory's
// names and their files' times and sizes, no block: cheap enough to run
// every CheckEvery. A change a tenant makes through its mapping moves no
// time; the pass each Interval fences that.
func (c *collector) check() bool {
	now := listed(c.dir)
	if now == c.seen {
		return false
	}
	c.seen = now
	place.Fence(c.dir, c.gpus...)
	return true
}

// listed is what check compares of dir: each entry's name, and but for
// the node blocks and their GPUs' files (which each fence writes) its
// modification time and size. Hidden entries are left out: the locks,
// written at each lock, and files being made.
func listed(dir string) string {
	des, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, de := range des {
		name := de.Name()
		switch st, err := de.Info(); {
		case strings.HasPrefix(name, "."), err != nil:
		case strings.HasPrefix(name, "node-"):
			fmt.Fprintln(&b, name)
		default:
			fmt.Fprintln(&b, name, st.ModTime().UnixNano(), st.Size())
		}
	}
	return b.String()
}

var (
	labels    = []string{"pid", "class", "command", "claim"} // a claim's pids are its containers'; pid 0: reserved, no process
	descTPCs  = prometheus.NewDesc("carve_tenant_tpcs", "TPCs in the process's partition on a GPU (by UUID; \"\": not recorded).", append(labels, "gpu"), nil)
	descLaun  = prometheus.NewDesc("carve_tenant_launches_total", "Kernel launches the shim has seen.", labels, nil)
	descFault = prometheus.NewDesc("carve_tenant_fault", "1 where the process met a GPU fault (ended ones are kept an hour).",
		append(labels, "fault", "ended"), nil)
	descBusy   = prometheus.NewDesc("carve_ls_busy", "1 while the LS tenant has work in flight on the GPU.", labels, nil)
	descBusyS  = prometheus.NewDesc("carve_ls_busy_seconds_total", "Time the LS tenant had work in flight.", labels, nil)
	descReq    = prometheus.NewDesc("carve_ls_requests_total", "Times the LS tenant went from idle to busy.", labels, nil)
	descPeriod = prometheus.NewDesc("carve_ls_busy_period_seconds",
		"The LS tenant's busy periods, from its first launch after idle to its work drained (bounds: ctl.HistBound).", labels, nil)
	descAlone = prometheus.NewDesc("carve_ls_busy_period_alone_seconds",
		"The LS tenant's busy periods during which no BE tenant launched on the GPU (from a second before).", labels, nil)
	descMarked = prometheus.NewDesc("carve_ls_marked_request_seconds",
		"The LS tenant's requests as its program marks them (carve run --mark): each NVTX range of that name, from its push or start to its pop or end.", append(labels, "mark"), nil)
	descMarkDrop = prometheus.NewDesc("carve_ls_marked_request_dropped_total",
		"The LS tenant's marked requests the shim could not time (nested too deep, or too many open at once).", append(labels, "mark"), nil)
	descSLO     = prometheus.NewDesc("carve_ls_slo_seconds", "What the SLO controller holds the LS tenant's estimate under: its SLO's time, or a multiple of its estimate alone at the window's request rate (absent until it has an alone reference).", labels, nil)
	descSLOP99  = prometheus.NewDesc("carve_ls_slo_window_p99_seconds", "The p99 of the LS tenant's busy periods (its marked requests, with carve run --mark) over the SLO controller's window.", labels, nil)
	descSLOEst  = prometheus.NewDesc("carve_ls_slo_estimate_seconds", "The SLO controller's estimate of the LS tenant's requests' p99 over its window, queueing included (slo.Estimate): what it holds under carve_ls_slo_seconds.", labels, nil)
	descCalib   = prometheus.NewDesc("carve_ls_slo_calibrating", "1 while the SLO controller calibrates the LS tenant's multiple SLO (no alone reference yet: its GPU's BE tenants held at share 0 while it has periods), else 0.", labels, nil)
	descLevel   = prometheus.NewDesc("carve_ls_slo_be_level", "The share of the LS tenant's busy time the SLO controller gave the BE tenants on its GPU at its last step (1: all; 0: they run only while no LS work is in flight).", labels, nil)
	descAttain  = prometheus.NewDesc("carve_ls_slo_attainment", "The share of the LS tenant's busy periods in the SLO controller's window within carve_ls_slo_seconds, its SLO's target at the window's request rate (slo.Attainment, as carve ls and top say it; 1 with no period or no target yet).", labels, nil)
	descHeldS   = prometheus.NewDesc("carve_be_held_seconds_total", "Time the BE tenant's launches waited for LS work.", labels, nil)
	descHeld    = prometheus.NewDesc("carve_be_held_launches_total", "BE launches that waited for LS work.", labels, nil)
	descNarrow  = prometheus.NewDesc("carve_be_narrow_launches_total", "BE launches let through, within the share, while LS work was in flight.", labels, nil)
	descInfl    = prometheus.NewDesc("carve_be_inflight", "BE launches in flight on the GPU.", labels, nil)
	descPaused  = prometheus.NewDesc("carve_be_paused", "1 while the SLO controller pauses the BE tenant (no launch, LS work in flight or not: "+status.PauseWhy+"), else 0.", labels, nil)
	descKern    = prometheus.NewDesc("carve_be_kernel_seconds", "The BE tenant's kernels' time, as its shim measures it.", labels, nil)
	descBW      = prometheus.NewDesc("carve_bw_share", "The tenant's share of the GPU's memory bandwidth (--bw): its slot of each epoch, as a fraction.", append(labels, "strict"), nil)
	descBWHeld  = prometheus.NewDesc("carve_bw_held_seconds_total", "Time the launches of a tenant with a bandwidth share waited for its slot.", labels, nil)
	descBWHeldN = prometheus.NewDesc("carve_bw_held_launches_total", "Launches of a tenant with a bandwidth share that waited for its slot.", labels, nil)
	descBWBusy  = prometheus.NewDesc("carve_bw_kernel_seconds_total", "GPU time of the kernels of a tenant with a bandwidth share, as its gate measured it while it gated (its rate: the share of the GPU's time it used).", labels, nil)
	descDRAM    = prometheus.NewDesc("carve_dram_bytes_total", "DRAM bytes of a tenant's launches by its kernel table (--kernels): each launch charged its function's bytes as measured once.", labels, nil)
	descDRAMUnk = prometheus.NewDesc("carve_dram_unknown_launches_total", "Launches of a tenant with a kernel table of functions the table has no entry for (a graph's launch is one).", labels, nil)
	descBeside  = prometheus.NewDesc("carve_be_beside_launches_total", "Launches of a BE tenant's compute-bound kernels (by its kernel table) made beside busy LS work, held by no share.", labels, nil)
	descMem     = prometheus.NewDesc("carve_tenant_memory_bytes",
		"GPU memory: what the process holds (used) and its tenant's limit (limit; absent: none).", append(labels, "kind"), nil)
	descMemRef = prometheus.NewDesc("carve_tenant_memory_refused_total", "Allocations of the tenant refused at its memory limit.", labels, nil)
	descLSBusy = prometheus.NewDesc("carve_node_ls_busy", "LS tenants of a GPU with work in flight now.", []string{"node"}, nil)
	descRecl   = prometheus.NewDesc("carve_daemon_reclaimed_slots_total", "Node slots of dead LS tenants the daemon freed.", nil, nil)
	descBad    = prometheus.NewDesc("carve_blocks_unreadable", "Control blocks carve could not read, and skipped, by why (see carve ls).", []string{"reason"}, nil)
	descLock   = prometheus.NewDesc("carve_placement_lock_held", "1 where a process of a user but root holds the node directory's placement lock at the scrape (place.LockHolder): "+
		"one that holds it for long delays other users' placements by place.PassOver and fails moves and root's placements.", []string{"pid", "user"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if pid, user, ok := place.LockHolder(c.dir); c.checks && ok { // the node directory's, as root
		ch <- prometheus.MustNewConstMetric(descLock, prometheus.GaugeValue, 1, strconv.Itoa(pid), user)
	}
	events, _ := xid.Read()
	rows, _ := status.List(c.dir, events)
	rows, skipped := status.Readable(rows)
	bad := map[string]int{}
	for _, r := range skipped {
		bad[r.Unreadable.Reason]++
	}
	for reason, n := range bad {
		ch <- prometheus.MustNewConstMetric(descBad, prometheus.GaugeValue, float64(n), reason)
	}
	for _, r := range rows {
		command := ""
		if len(r.Command) > 0 && c.showCommands {
			command = status.Command(r, 40)
		}
		l := []string{fmt.Sprint(r.PID), r.Class, command, r.Claim}
		if r.Fault != nil {
			ch <- prometheus.MustNewConstMetric(descFault, prometheus.GaugeValue, 1, append(l, r.Fault.Name, fmt.Sprint(r.Ended))...)
		}
		if r.Ended {
			continue
		}
		for _, g := range status.Parts(r) {
			ch <- prometheus.MustNewConstMetric(descTPCs, prometheus.GaugeValue, float64(g.NumTPCs), append(l, g.GPU)...)
		}
		ch <- prometheus.MustNewConstMetric(descLaun, prometheus.CounterValue, float64(r.Launches), l...)
		ch <- prometheus.MustNewConstMetric(descMem, prometheus.GaugeValue, float64(r.Memory.Used), append(l, "used")...)
		if r.Memory.Limit > 0 {
			ch <- prometheus.MustNewConstMetric(descMem, prometheus.GaugeValue, float64(r.Memory.Limit), append(l, "limit")...)
			ch <- prometheus.MustNewConstMetric(descMemRef, prometheus.CounterValue, float64(r.Memory.Refused), l...)
		}
		if b := r.BW; b != nil {
			ch <- prometheus.MustNewConstMetric(descBW, prometheus.GaugeValue, b.Share, append(l, fmt.Sprint(b.Strict))...)
			ch <- prometheus.MustNewConstMetric(descBWHeld, prometheus.CounterValue, b.Held.Seconds(), l...)
			ch <- prometheus.MustNewConstMetric(descBWHeldN, prometheus.CounterValue, float64(b.HeldLaunches), l...)
			ch <- prometheus.MustNewConstMetric(descBWBusy, prometheus.CounterValue, b.Busy.Seconds(), l...)
		}
		if k := r.Kernels; k != nil {
			ch <- prometheus.MustNewConstMetric(descDRAM, prometheus.CounterValue, float64(k.Bytes), l...)
			ch <- prometheus.MustNewConstMetric(descDRAMUnk, prometheus.CounterValue, float64(k.Unknown), l...)
			if r.Class == "be" {
				ch <- prometheus.MustNewConstMetric(descBeside, prometheus.CounterValue, float64(k.Beside), l...)
			}
		}
		t := r.Tide
		switch {
		case t == nil:
		case r.Class == "ls":
			busy := 0.0
			if t.State == ctl.TideBusy {
				busy = 1
			}
			ch <- prometheus.MustNewConstMetric(descBusy, prometheus.GaugeValue, busy, l...)
			ch <- prometheus.MustNewConstMetric(descBusyS, prometheus.CounterValue, t.Busy.Seconds(), l...)
			ch <- prometheus.MustNewConstMetric(descReq, prometheus.CounterValue, float64(t.Requests), l...)
			ch <- histogram(descPeriod, t.Periods, l)
			ch <- histogram(descAlone, t.Alone, l)
			if m := r.Marked; m != nil {
				ch <- histogram(descMarked, t.Marked, append(l, m.Mark))
				ch <- prometheus.MustNewConstMetric(descMarkDrop, prometheus.CounterValue, float64(m.Dropped), append(l, m.Mark)...)
			}
			v, ok := c.slo.View(slo.Key{Claim: r.Claim, PID: r.PID})
			if ok {
				calibrating := 0.0
				if v.Calibrating {
					calibrating = 1
				}
				ch <- prometheus.MustNewConstMetric(descCalib, prometheus.GaugeValue, calibrating, l...)
				ch <- prometheus.MustNewConstMetric(descLevel, prometheus.GaugeValue, v.Level, l...)
			}
			if ok && v.Target > 0 {
				ch <- prometheus.MustNewConstMetric(descSLO, prometheus.GaugeValue, v.Target.Seconds(), l...)
				ch <- prometheus.MustNewConstMetric(descSLOP99, prometheus.GaugeValue, v.P99.Seconds(), l...)
				ch <- prometheus.MustNewConstMetric(descSLOEst, prometheus.GaugeValue, v.Estimate.Seconds(), l...)
				ch <- prometheus.MustNewConstMetric(descAttain, prometheus.GaugeValue, v.Attainment, l...)
			}
		case r.Class == "be":
			ch <- prometheus.MustNewConstMetric(descHeldS, prometheus.CounterValue, t.Held.Seconds(), l...)
			ch <- prometheus.MustNewConstMetric(descHeld, prometheus.CounterValue, float64(t.HeldLaunches), l...)
			ch <- prometheus.MustNewConstMetric(descNarrow, prometheus.CounterValue, float64(t.NarrowLaunch), l...)
			ch <- prometheus.MustNewConstMetric(descInfl, prometheus.GaugeValue, float64(t.Inflight), l...)
			paused := 0.0
			if t.Paused() {
				paused = 1
			}
			ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, paused, l...)
			ch <- prometheus.MustNewConstMetric(descKern, prometheus.GaugeValue, t.Kernel.Seconds(), l...)
		}
	}
	nodes, _ := ctl.Nodes(c.dir)
	for _, n := range nodes {
		busy := 0
		for _, s := range n.LS() {
			if s.Busy && s.Beat < ctl.NodeLease {
				busy++
			}
		}
		ch <- prometheus.MustNewConstMetric(descLSBusy, prometheus.GaugeValue, float64(busy), n.Name())
		n.Close()
	}
	ch <- prometheus.MustNewConstMetric(descRecl, prometheus.CounterValue, float64(c.reclaimed.Load()))
}

// histogram is h as a Prometheus histogram: every bucket's bound, in
// seconds, with the periods shorter than it (the shim's bounds are
// exclusive, Prometheus's le inclusive: a period of exactly a bound's
// nanoseconds is counted in the bucket above).
func histogram(desc *prometheus.Desc, h ctl.Hist, l []string) prometheus.Metric {
	buckets := make(map[float64]uint64, ctl.HistBuckets-1)
	var n uint64
	for i := range ctl.HistBuckets - 1 {
		n += h.Counts[i]
		buckets[ctl.HistBound(i).Seconds()] = n
	}
	return prometheus.MustNewConstHistogram(desc, h.Count(), h.Sum.Seconds(), buckets, l...)
}
