// The serve benchmark's setups and runs: how each mechanism starts the LS
// service and the BE job, each setup in each start order, and one run of a
// setup at one rate, its two programs started, told to go and read back.

package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/slo"
)

// setup is how one mechanism starts the LS service and the BE job.
type setup struct {
	name           string
	lsPre, bePre   []string
	lsEnv, beEnv   []string
	withLS, withBE bool
	beFirst        bool    // the BE starts and runs before the LS starts; it is measured over the LS's serving
	beReady        bool    // the BE starts and gets ready before the LS starts, and waits for the LS to be ready
	lsRate         float64 // 0: the rate of the point; -1: an LS that gets no request (run at the first rate only)
	// slo is the LS's, of a tide setting that has one: the SLO controller
	// runs (in this process) while the LS does, and a time is also what
	// its latencies are judged against (ownSLOPoints)
	slo ctl.SLO
	// held: the BE is paused from the LS's serving to its report (holdBE)
	held bool
}

func (e *Env) serveSetups(o ServeOptions) []setup {
	mps := e.MPSEnv()
	none := []string{"CUDA_MPS_PIPE_DIRECTORY=" + filepath.Join(e.MPS.Root, "none")}
	pct := func(p int) string { return fmt.Sprintf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", p) }
	var out []setup
	for _, m := range o.Mechanisms {
		switch m {
		case "timeslice":
			out = append(out, setup{name: "time slicing", lsEnv: none, beEnv: none, withLS: true, withBE: true})
		case "mps":
			out = append(out, setup{name: "MPS", lsEnv: mps, beEnv: mps, withLS: true, withBE: true})
		case "mps-split":
			for _, p := range o.MPSSplits {
				out = append(out, setup{name: fmt.Sprintf("MPS %d%%/%d%%", p, 100-p), withLS: true, withBE: true,
					lsEnv: append(append([]string{}, mps...), pct(p)), beEnv: append(append([]string{}, mps...), pct(100-p))})
			}
		case "static":
			for _, k := range o.StaticSplits {
				lsSet := partition.Pack(e.Topo, k, nil)
				beSet := partition.Pack(e.Topo, len(e.Topo.TPCs)-k, lsSet)
				out = append(out, setup{name: fmt.Sprintf("carve static %d/%d TPCs", len(lsSet), len(beSet)), withLS: true, withBE: true,
					lsPre: e.CarveRun(lsSet), bePre: e.CarveRun(beSet), lsEnv: mps, beEnv: mps})
			}
		case ServeHeld:
			t := TideSetting{BE: ctl.Policy{Class: ctl.ClassBE}, LS: ctl.Policy{Class: ctl.ClassLS}}
			out = append(out, setup{name: "carve, BE paused while the LS serves", withLS: true, withBE: true, held: true,
				lsPre: e.Run(t.lsFlags(o.LSTPCs)...), bePre: e.Run(t.beFlags()...), lsEnv: mps, beEnv: mps})
		case "tide":
			for _, t := range o.Tide {
				out = append(out, setup{name: "carve tide, " + t.String(), withLS: true, withBE: true, slo: t.LS.SLO,
					lsPre: e.Run(t.lsFlags(o.LSTPCs)...), bePre: e.Run(t.beFlags()...), lsEnv: mps, beEnv: mps})
			}
			for _, t := range o.Tide { // the BE's throughput with an idle LS tenant beside it
				if o.Idle {
					out = append(out, setup{name: "carve tide, no LS request, " + t.String(), withLS: true, withBE: true, lsRate: -1, slo: t.LS.SLO,
						lsPre: e.Run(t.lsFlags(o.LSTPCs)...), bePre: e.Run(t.beFlags()...), lsEnv: mps, beEnv: mps})
				}
			}
		}
	}
	return inOrders(out, o.Orders)
}

// inOrders is each setup in each order, the orders of a setup one after
// another; a setup whose BE starts first is named so.
func inOrders(setups []setup, orders []string) []setup {
	if len(orders) == 0 {
		orders = ServeOrders[:1]
	}
	var out []setup
	for _, s := range setups {
		for _, o := range orders {
			t := s
			switch o {
			case "be-first":
				t.beFirst, t.name = true, s.name+beFirstSuffix
			case "be-ready-first":
				t.beReady, t.name = true, s.name+beReadySuffix
			}
			out = append(out, t)
		}
	}
	return out
}

// served is what one run of a setup measured.
type served struct {
	latencies []float64 // ms
	arrivals  []float64 // s, from the LS's start: each request's
	lsStart   float64   // s on CLOCK_MONOTONIC: the LS's start, which its arrivals count from (0: not said)
	beEnds    []float64 // s on CLOCK_MONOTONIC: the end of each of the BE's steps, its RecoveryTail included
	requests  int
	items     int    // the BE's, in unit
	unit      string // images, or sequences
	seconds   float64
	lsInfo    map[string]any // each program's model: its parameters and shape
	beInfo    map[string]any
	// periods: the LS's busy periods over its serving, from its control
	// block, where carve placed it as an LS tenant (nil otherwise)
	periods *ctl.Hist
	// steerErr is the first error of the SLO controller of a setup that
	// steers (another controller on the runtime directory, a block it
	// could not write): the point is then no SLO result
	steerErr error
	// holdErr: a held setup's first failed pause of its BE (holdBE): the
	// point is then no reference
	holdErr error
	// steps: the SLO controller's view of the LS after each of its steps
	// over the LS's serving, in a setup that steers
	steps []steerStep
}

// steerStep is the SLO controller's view of an LS tenant after a step, at
// a time from the start of the LS's serving.
type steerStep struct {
	at time.Duration
	v  slo.View
}

// lsPeriods reads the busy-period histogram of pid's control block, if
// carve placed pid as an LS tenant.
func lsPeriods(pid int) (ctl.Hist, bool) {
	dir, err := ctl.Dir()
	if err != nil {
		return ctl.Hist{}, false
	}
	e, err := tenantBlock(dir, pid, ctl.ClassLS)
	return e.TideStatus.Periods, err == nil
}

// tenantBlock is the control block in dir of pid, a tenant of class.
func tenantBlock(dir string, pid int, class uint32) (ctl.Entry, error) {
	l, err := ctl.Peek(dir)
	if err != nil {
		return ctl.Entry{}, err
	}
	for _, e := range l.Live {
		if e.PID == pid && e.Class == class {
			return e, nil
		}
	}
	return ctl.Entry{}, fmt.Errorf("no %s tenant of pid %d in %s", strings.ToUpper(ctl.ClassName(class)), pid, dir)
}

// serveProc is one of the two programs of a run, started and ready.
type serveProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (w Workers) startServe(ctx context.Context, prefix, env []string, argv ...string) (*serveProc, error) {
	cmd := w.command(ctx, prefix, env, argv...)
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serveProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := p.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		p.end(0)
		return nil, fmt.Errorf("%s did not get ready (%q, %v)", argv[0], line, err)
	}
	return p, nil
}

// end closes p's stdin, which a program that reported and idles takes as
// the end of its run (the LS: serve_ls.py), gives it up to grace to exit
// by itself (0: none), kills it if it has not, and reaps it.
func (p *serveProc) end(grace time.Duration) {
	p.in.Close()
	exited := make(chan struct{})
	go func() {
		p.cmd.Wait()
		close(exited)
	}()
	if grace > 0 {
		select {
		case <-exited:
			return
		case <-time.After(grace):
		}
	}
	p.cmd.Process.Kill()
	<-exited
}

// exitGrace is how long a program that has reported may take to exit by
// itself at the end of a run (a CUDA program's teardown) before it is
// killed.
const exitGrace = 10 * time.Second

// serveGrace is how long after a run's time its programs may take to
// report: one that has not by then is killed (a kernel that never
// finishes would otherwise hold the run, and the GPU, for good).
var serveGrace = 90 * time.Second

// serveLine is the one line a serve program prints when it is done.
type serveLine struct {
	Latencies []float64      `json:"latencies_ms"` // the LS's
	Arrivals  []float64      `json:"arrivals_s"`   // the LS's requests', from its start
	Start     float64        `json:"start_s"`      // the LS's start, s on CLOCK_MONOTONIC (one clock for every process)
	Ends      []float64      `json:"ends_s"`       // the BE's steps' ends, s on CLOCK_MONOTONIC
	Requests  int            `json:"requests"`
	Items     int            `json:"items"` // the BE's: images or sequences, as Unit says
	Unit      string         `json:"unit"`
	Seconds   float64        `json:"seconds"`
	Info      map[string]any `json:"info"` // the model's parameter count and shape
}

// runServe runs one setup at one rate and collects what its programs
// print. LS first: it starts the LS, then, once the LS is ready, the BE,
// and tells both to go when both are ready; BE ready first, the same with
// the BE started first. BE first: it starts the BE and
// tells it to go, then starts the LS while the BE runs, and once the LS is
// ready tells it to go and marks the start of the BE's window, which it
// ends when the LS has reported: the BE is measured over the LS's serving.
// Where the LS gets requests beside a BE, the BE is told when the LS has
// reported (BE first: the window's end) and runs RecoveryTail on, for its
// recovery to be seen beside the LS idle (it idles until the run is over,
// as a service between requests does, not exiting beside the BE's tail).
// At the end each program that reported has its stdin closed and
// exitGrace to exit by itself; on an error, each is killed.
func (w Workers) runServe(s setup, ls, be []string, lsRate float64, d time.Duration) (served, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+4*time.Minute)
	defer cancel()
	var lsProc, beProc *serveProc
	var r served
	stopSteering := func() error { return nil } // stops the controller, and says its first error
	type tracedStep struct {
		at  time.Time
		pid int
		v   slo.View
	}
	var traced []tracedStep               // the controller's steps, read once it has stopped
	var serving, end time.Time            // when the LS was told to serve, and when it reported
	unhold := func() error { return nil } // ends a held setup's pause of the BE
	defer func() { unhold() }()
	if s.slo != (ctl.SLO{}) {
		dir, err := ctl.Dir()
		if err != nil {
			return r, err
		}
		steering, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		var first error // the controller's, read once it has stopped
		ctrl := slo.New(dir)
		ctrl.Trace = func(k slo.Key, v slo.View) { traced = append(traced, tracedStep{time.Now(), k.PID, v}) }
		go func() {
			defer close(done)
			ctrl.Run(steering, 0, func(err error) { first = cmp.Or(first, err) })
		}()
		stopped := false
		stopSteering = func() error {
			if !stopped {
				stop()
				<-done
				stopped = true
			}
			return first
		}
		defer stopSteering()
	}
	var grace time.Duration // exitGrace once both programs reported (the LS ends when its stdin closes); else none
	defer func() {
		for _, p := range []*serveProc{lsProc, beProc} {
			if p != nil {
				p.end(grace)
			}
		}
	}()
	startLS := func() error {
		rate := lsRate
		if s.lsRate < 0 {
			rate = 0
		}
		argv := append(append([]string{}, ls...), fmt.Sprintf("--rate=%g", rate))
		p, err := w.startServe(ctx, s.lsPre, s.lsEnv, argv...)
		if err != nil {
			return fmt.Errorf("LS: %w", err)
		}
		lsProc = p
		return nil
	}
	beFirst := s.beFirst && s.withLS && s.withBE
	tail := s.withLS && s.withBE && s.lsRate >= 0
	startBE := func() error {
		argv := append([]string{}, be...)
		if beFirst {
			argv = append(argv, "--marks")
		}
		if tail {
			argv = append(argv, fmt.Sprintf("--tail=%g", RecoveryTail.Seconds()))
		}
		p, err := w.startServe(ctx, s.bePre, s.beEnv, argv...)
		if err != nil {
			return fmt.Errorf("BE: %w", err)
		}
		beProc = p
		return nil
	}
	if beFirst {
		if err := startBE(); err != nil {
			return r, err
		}
		fmt.Fprintln(beProc.in, "go")
		if err := startLS(); err != nil {
			return r, err
		}
		unhold = hold(s, beProc)
		fmt.Fprintln(lsProc.in, "go")
		serving = time.Now()
		fmt.Fprintln(beProc.in, "start") // the window's start
	} else {
		starts := []func() error{startLS, startBE}
		if !s.withLS {
			starts = starts[1:]
		} else if !s.withBE {
			starts = starts[:1]
		} else if s.beReady {
			starts[0], starts[1] = startBE, startLS
		}
		for _, start := range starts {
			if err := start(); err != nil {
				return r, err
			}
		}
		unhold = hold(s, beProc)
		for _, p := range []*serveProc{lsProc, beProc} {
			if p != nil {
				fmt.Fprintln(p.in, "go")
			}
		}
		serving = time.Now()
	}
	var before ctl.Hist
	counted := false
	if lsProc != nil && s.lsPre != nil {
		before, counted = lsPeriods(lsProc.cmd.Process.Pid)
	}
	late := time.AfterFunc(d+serveGrace, cancel)
	defer late.Stop()
	var v serveLine
	result := func(p *serveProc, which string) error {
		v = serveLine{}
		line, err := p.out.ReadString('\n')
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s gave no result within %v of its start (stopped; hung?)", p.cmd.Args[0], d+serveGrace)
		}
		if err != nil {
			return fmt.Errorf("%s ended without its results: %w", p.cmd.Args[0], err)
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return fmt.Errorf("the %s printed %q: %w", which, line, err)
		}
		return nil
	}
	if lsProc != nil {
		if err := result(lsProc, "LS"); err != nil {
			return r, err
		}
		r.latencies, r.arrivals, r.lsStart, r.requests, r.lsInfo = v.Latencies, v.Arrivals, v.Start, v.Requests, v.Info
		end = time.Now()
		r.holdErr = unhold()
		if after, ok := lsPeriods(lsProc.cmd.Process.Pid); ok && counted {
			h := after.Sub(before)
			r.periods = &h
		}
		if beFirst || tail {
			fmt.Fprintln(beProc.in, "stop") // the window's end, and the LS done: the BE's tail from here
		}
	}
	if beProc != nil {
		if err := result(beProc, "BE"); err != nil {
			return r, err
		}
		r.items, r.unit, r.seconds, r.beEnds, r.beInfo = v.Items, v.Unit, v.Seconds, v.Ends, v.Info
	}
	grace = exitGrace
	r.steerErr = stopSteering()
	for _, t := range traced {
		if lsProc != nil && t.pid == lsProc.cmd.Process.Pid && !t.at.Before(serving) && !t.at.After(end) {
			r.steps = append(r.steps, steerStep{t.at.Sub(serving), t.v})
		}
	}
	return r, nil
}
