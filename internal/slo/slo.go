// Package slo is carve's SLO controller: it keeps an estimate of the p99
// of each LS tenant's requests, queueing included, under the tenant's SLO
// (ctl.Policy.SLO) by setting the share and queue of the BE tenants on
// its GPUs (ctl.Handle.Steer), and gives the BE tenants all that leaves.
//
// Every interval (Step) it reads the control blocks, keeps the last
// WindowSteps of snapshots of each LS tenant's busy-period histogram,
// busy time and requests, and per GPU sets a level (the BE tenants'
// share) from each LS tenant's window and target. A server that takes one request at a time drains the GPU
// after each, so each request is a busy period of its own, and its queue
// shows only in how busy it is; the estimate (Estimate) is an M/G/1
// queue's: the p99 of a request's wait for those before it and its own
// period together, the wait's tail decaying at the queue's rate for the
// window's periods and rho, the share of the window the tenant was busy
// (at rho 0 it is the periods' p99, as for a tenant whose requests overlap
// into one period).
// A tenant whose program marks its requests (ctl.Policy.Mark), with NVTX
// attached and one marked range timed, is judged by them instead
// (requestsOf): its marked ranges as its periods, their total time as
// its busy time and their count as its requests, in a window and a
// calibration of their own. Its busy periods merge the requests queued
// behind one another that its poller did not see apart, and overstate
// the estimate: on the plant with half of those merged
// (marked_test.go), by periods the BE got a share of 0.000 to 0.001
// under a 15 ms SLO, by marks 0.046 to 0.080 with the SLO held.
// A time's target is the time; a multiple's is that many estimates alone:
// of the alone periods at the window's requests a second, no busier than
// the tenant over the window (TargetAt). The alone
// periods are the controller's calibration (calibrate.go): it holds the
// GPU's BE tenants at level 0 while the tenant has a period in its window
// (not for one in flight only, which gives nothing to calibrate on; idle,
// they get level 1 as ever, and the calibration goes on when it is busy
// again), and keeps the periods of the steps at level 0 from end to end,
// alone ones, the BE tenants paused meanwhile (ctl.Handle.Pause), until it has AloneMin of
// them; one that is stale (of the tenant's warm-up: stale) is made again.
// The periods the block counts alone (no BE launch during them) are not
// the reference: a BE kernel launched before one may run beside it all
// through. On the serial plant (2x, the BE first) a calibration takes 4
// steps, its estimate is 0.97 to 1.02 times the alone periods', and the
// requests' p99 over 10 s is then 0.63 to 0.88 times the target at a BE
// share of 0.09 to 0.11 (the server first: 0.59 to 0.89 times, 0.08 to 0.14).
//
// The law steers the tenant's utilization, which a change of level moves
// within a step, not the estimate, which lags it through the queue. Goal
// is the utilization at which the estimate of the window's periods is
// Aim of the target (by bisection); each step the level moves by a
// factor of exp(Gain * (goal - rho)), within MaxStep either way, rho the
// window's requests a second times the newest step's mean period. The
// tenant furthest from its goal binds: the lowest level proposed. An
// emergency halves the level at once (Backoff) and starts the window
// afresh: an estimate over Emergency times its target, or the tenant
// busy more than Saturated over its window or Backlog over its newest
// BacklogSteps steps (a queue it has not drained). A tenant that writes
// no busy time (its estimate is its periods' p99) halves the level over
// its target and raises it by Raise under Headroom of it. A tenant with
// no request begun in its newest QuietSteps steps (or QuietGaps of its
// mean gaps between requests) and none in flight is quiet; all quiet, the
// level is 1, all to the BE tenants (who the shim's gate holds back only
// while LS work is in flight anyway), and busy again, the level they had. On the serial plant of serial_test.go (70% busy alone, a 15 ms
// SLO) the requests' p99 over 10 s is 0.69 to 1.00 times the SLO and the
// BE's share 0.06 to 0.08, where the law that halved the level over the
// SLO and raised it by Raise under Headroom gave 0.87 to 1.76 times and
// 0.13 to 0.17; Aim 0.85 gave 0.83 to 1.14 times. On the H100
// (results/h100-580.159.04-2026-11-27/slo-final/), "2x" at half an LS's
// capacity kept 97.1% to 99.9% of requests within twice their p99 alone
// in either start order, and each phase of a load step (25%, 75%, 25% of
// its capacity) 99.8% or more; at 75% of it in a steady load the target,
// an estimate near saturation, swings with the window's request rate.
//
// A level at the bottom (under Bottom) for ZeroSteps steps that the law
// (or an emergency) would lower further, or with an LS tenant crowded
// (busier than RefBusy over its window, its estimate over Aim of its
// target), pauses the BE tenants as a calibration does, renewed each step
// while that lasts: at 0 a BE is held only while LS work is in flight,
// and near saturation the kernels it starts in the LS's short idle gaps
// are what a request waits for (on an H200 at 75% of an LS's capacity its
// level sat at 0.01 and requests still missed). The bottom is not 0
// alone: there the law flicks the level between 0 and MinShare. On the
// H100 at 75% of an LS's capacity a count of steps at 0 let a pause come
// in at most 2 to 23 of a run's 80 steps; from the bottom the BE tenants
// were paused in 12 to 27, and crowded too in 14 to 52, and the LS kept
// 95.77-99.86% of its requests within 2x alone where the same lease's
// build without either kept 87.55-98.82% (results/h100-580.159.04-2026-11-27,
// slo-bottom/). Still the BE came back each few steps, the law lifting
// the level off the bottom while it was paused: a pause that comes back
// within Relapse steps of the last one's end is held longer past the
// steps that ask it, twice each time up to RestMax (5 s), unless the LS
// tenants leave room (step's roomy: at a load that has fallen), and while held
// the level does not rise (rest.go). A BE held paused all through the
// LS's serving, the most an SLO could give the LS there, kept 99.81% and
// 100.00% (LS first, BE first) within 2x alone, where the controller of
// the build before kept 99.16% and 98.09% with the BE at 5% and 3% of its
// rate alone; with rests 99.02-99.84% in four arms of two leases, the BE
// at 1-6% (results/h100-580.159.04-2026-11-28/slo-rest/).
//
// A BE tenant's share is the level of its GPU (the lowest, on several),
// its queue as much of what it asked as the level says. Steered below a
// share of 1, its shim keeps it off the reserved TPCs of the LS tenants
// busy in the last second between their busy periods too (tide_be.c), so
// that a request arriving then does not wait behind a BE kernel begun in
// the gap: at 75% of an LS's capacity, where the level sits near 0, those
// are what requests waited for.
//
// The controller keeps no state a restart needs: it keeps each GPU's
// level, and a restarted one reads it back from the BE tenants' blocks
// (current: a claim's pod cannot pull it down; the law moves it from
// where it is; a restart loses only the step of a GPU's last emergency, where its window
// starts, and the calibrations, kept in memory, which it then makes
// again), and what a BE asked is kept in its block
// (Snapshot.Steered) until no SLO binds it and it is put back. A restarted
// controller holds the dials where they are until its window has two
// snapshots. With no SLO on any tenant it writes no block (and lists
// the directory with ctl.Peek, which removes nothing).
//
// One controller steers a runtime directory: Run holds the flock of its
// LockFile (lock.go), and one that cannot take it steers nothing, says
// so once (ErrOther) and takes over when the holder ends.
package slo

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// The control law's constants.
const (
	DefaultInterval  = 100 * time.Millisecond // how often Run steps
	WindowSteps      = 8                      // the window, in steps: 800 ms at DefaultInterval
	Aim              = 0.75                   // the share of its target the estimate at Goal is
	Gain             = 1                      // the level's log change a step per unit of Goal - rho
	MaxStep          = 1.25                   // the most the level moves a step by that, a factor
	Emergency        = 1.5                    // an estimate over this many times its target halves the level
	Backoff          = 0.5                    // the level's factor in an emergency (or over, without busy time)
	Raise            = 0.05                   // what the level gains a step well under, without busy time
	Headroom         = 0.8                    // well under: an estimate below this share of the target
	MinShare         = 0.01                   // a level below this is 0
	Bottom           = 2 * MinShare           // a level below this is at the bottom (ZeroSteps)
	QueueMin         = 50 * time.Microsecond  // a BE's queue at level 0 (or what it asked, if less)
	QueueOpen        = 2 * time.Millisecond   // the queue's top for a BE that asked no bound, below level 1
	AloneMin         = 20                     // alone periods a multiple of the alone p99 needs
	StaleRatio       = 1.25                   // a reference whose median or p99 period is this many times the window's is stale
	RecalibrateSteps = 10                     // the fewest steps between a calibration and the next
	MinIdle          = 0.05                   // the least 1 - rho the estimate's wait divides by
	RefBusy          = 0.8                    // the busiest a multiple's reference queue is taken (TargetAt)
	Saturated        = 0.95                   // a utilization above which the level halves, whatever the estimate
	Backlog          = 0.98                   // ... and over the newest BacklogSteps: a queue the server has not drained
	BacklogSteps     = 2
	PauseSteps       = 2           // a calibration's pause of the BE tenants lasts this many intervals past its step
	ZeroSteps        = 3           // a level under Bottom this many steps that the law would lower still (or crowded) pauses the BE tenants
	Relapse          = WindowSteps // a pause from the bottom this many steps or fewer after the last lasts twice as long (rest)
	RestMax          = 50          // ... at most this many steps past the last that asked it
	QuietSteps       = 2           // an LS tenant with no request begun or period ended in this many steps ...
	QuietGaps        = 8           // ... and this many of its mean gaps between requests, none in flight, is quiet
	quantile         = 0.99
)

// Controller is the SLO controller of a runtime directory's blocks.
type Controller struct {
	// Now is the clock a window's length is read on (nil: time.Now); a
	// test's plant sets its own before the first Step.
	Now func() time.Time
	// Mono is the clock of the BE tenants' pauses (ctl.Handle.Pause; nil:
	// ctl.Mono, the shims'); a test's plant sets its own.
	Mono func() time.Duration
	// Trace, if set, is given each LS tenant's View after each Step
	// (bench serve records the steps), under the controller's lock: it
	// must not call the controller.
	Trace func(Key, View)

	dir    string
	mu     sync.Mutex
	step   int
	hist   map[string][]sample    // by LS block (lsKey): its last WindowSteps+1 snapshots
	cut    map[string]int         // by GPU: the step of its last backoff; the window starts there
	levels map[string]float64     // by GPU: the level it last set (read back from the blocks after a restart)
	view   map[Key]View           // by LS tenant, for carve daemon's metrics
	cal    map[string]calibration // by LS block: its calibration (calibrate.go), where its block's alone periods will not do
	zero   map[string]bool        // the GPUs whose BE tenants were all at level 0 at the last step
	paused map[string]bool        // the BE blocks it paused at the last step
	resume map[string]float64     // by GPU: the level it had when its LS tenants went quiet
	atZero map[string]int         // by GPU: the steps since its level last was above 0 (or it calibrated)
	rests  map[string]rest        // by GPU: its pauses from the bottom
	every  time.Duration          // Run's interval (DefaultInterval before): a pause lasts PauseSteps of it
	lockMu sync.Mutex
	lock   *os.File // the directory's LockFile, locked, while c holds it (lock.go)
}

// sample is an LS tenant's requests at a step, read at at: its busy
// periods, busy time and requests begun; or, where its program marks its
// requests (marked), its marked ranges, their total time and count.
type sample struct {
	step   int
	at     time.Time
	h      ctl.Hist
	busy   time.Duration
	reqs   uint64
	marked bool
}

// requestsOf is what e's block says of its requests now (no step yet):
// its marked ranges where it has a mark, NVTX handed the shim its ranges
// and it has timed one (a program that marks none that match is judged
// by its busy periods), else its busy periods.
func requestsOf(e ctl.Entry) sample {
	ts := e.TideStatus
	if e.Tide.Mark != "" && ts.MarkState == ctl.MarkAttached && ts.Marked.Count() > 0 {
		return sample{h: ts.Marked, busy: ts.Marked.Sum, reqs: ts.Marked.Count(), marked: true}
	}
	return sample{h: ts.Periods, busy: ts.Busy, reqs: ts.Requests}
}

// Key names an LS tenant's block as status.Row does: the claim it runs
// in ("" for none) and its pid there.
type Key struct {
	Claim string
	PID   int
}

// View is what the controller last saw of an LS tenant with an SLO,
// over its window.
type View struct {
	SLO         ctl.SLO
	Marked      bool          // its requests are the ranges its program marks (ctl.Policy.Mark), not its busy periods
	Target      time.Duration // what its SLO holds Estimate under; 0: a multiple with no reference yet
	Calibrating bool          // a multiple with no reference yet: calibrating, its GPU's BE tenants at level 0 while it has periods
	Calibrated  bool          // a multiple whose calibration (its reference) is made
	P99         time.Duration // of the window's busy periods
	Periods     uint64        // in the window
	Attainment  float64       // the window's periods within Target (Attainment; 1 with none, or no Target)
	Utilization float64       // rho: the window's busy time over its length, at most 1
	Estimate    time.Duration // of its requests' p99, queueing included (Estimate): what it holds under Target
	Level       float64       // the share its GPU's BE tenants were given by the step (the lowest of its GPUs')
	Paused      bool          // the step paused its GPU's BE tenants (a calibration's, or from the bottom)
}

// New is a controller of the blocks in dir.
func New(dir string) *Controller {
	return &Controller{dir: dir, hist: map[string][]sample{}, cut: map[string]int{}, view: map[Key]View{},
		cal: map[string]calibration{}, zero: map[string]bool{}, levels: map[string]float64{}, paused: map[string]bool{}, resume: map[string]float64{}, atZero: map[string]int{}, rests: map[string]rest{}, every: DefaultInterval}
}

// Run steps every interval (0: DefaultInterval) until ctx ends, while it
// holds the directory's lock (TryStep): where another controller holds
// it, Run does not steer, reports ErrOther once, and tries again each
// interval, taking over when the other ends. Errors go to report (nil:
// dropped). It lets the lock go when ctx ends.
func (c *Controller) Run(ctx context.Context, interval time.Duration, report func(error)) {
	if interval == 0 {
		interval = DefaultInterval
	}
	c.mu.Lock()
	c.every = interval
	c.mu.Unlock()
	t := time.NewTicker(interval)
	defer t.Stop()
	defer c.Close()
	waiting := false
	for {
		err := c.TryStep()
		other := errors.Is(err, ErrOther)
		if err != nil && report != nil && !(other && waiting) {
			report(err)
		}
		waiting = other
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// View is what the last step saw of the LS tenant k; false where it has
// no SLO, or is not known.
func (c *Controller) View(k Key) (View, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.view[k]
	return v, ok
}

// tenant is a block as a step reads it.
type tenant struct {
	ctl.Entry
	key Key
}

// gpu is what a step finds on one GPU.
type gpu struct {
	ls    []lsView
	be    []tenant
	bound bool // an LS tenant with an SLO it can resolve is on it
	ready bool // each has a window
	level float64
	hold  bool // leave its BE tenants' dials as they are
	pause bool // calibrating: its BE tenants paused, LS work in flight or not (ctl.Handle.Pause)
}

// lsView is an LS tenant with an SLO, as a step judges it.
type lsView struct {
	tenant
	samples     []sample
	ref         ctl.Hist      // what a multiple SLO is a multiple of (reference)
	calibrating bool          // a multiple whose reference has fewer than AloneMin periods
	target      time.Duration // with no queue: Target of ref
}

// Step reads the blocks once (ctl.Peek: it removes none, as it writes
// none where no SLO is set) and sets the BE tenants' dials. A block's
// class and SLO are as carve believes them: in the node directory, its
// tenant's record's (ctl.Records.Of); a claim's process's, its claim's
// record's (claimed). The blocks
// it cannot read are skipped; an error is one of the directory's, or of
// a block it could not write (the others are written).
func (c *Controller) Step() error {
	l, err := ctl.Peek(c.dir)
	if err != nil {
		return err
	}
	var all []tenant
	for _, e := range l.Live {
		all = append(all, tenant{l.Records.Of(e), Key{PID: e.PID}})
	}
	for _, cl := range l.Claims {
		for _, e := range cl.Procs {
			all = append(all, tenant{claimed(e, cl.Root), Key{Claim: cl.Name(), PID: e.PID}})
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step++
	gpus := c.readLS(all)
	for _, t := range all {
		if t.Class != ctl.ClassBE {
			continue
		}
		for _, g := range gpusOf(t.Entry) {
			if gpus[g] != nil {
				gpus[g].be = append(gpus[g].be, t)
			}
		}
	}
	for name, g := range gpus {
		c.decide(name, g)
	}
	for _, m := range []map[string]float64{c.levels, c.resume} { // the GPUs no LS tenant with an SLO is on now
		maps.DeleteFunc(m, func(name string, _ float64) bool { return gpus[name] == nil })
	}
	maps.DeleteFunc(c.atZero, func(name string, _ int) bool { return gpus[name] == nil })
	maps.DeleteFunc(c.rests, func(name string, _ rest) bool { return gpus[name] == nil })
	err = c.write(all, gpus)
	for _, t := range all {
		v, ok := c.view[t.key]
		if !ok {
			continue
		}
		v.Level = 1
		for _, name := range gpusOf(t.Entry) {
			if g := gpus[name]; g != nil && g.bound && len(g.be) > 0 {
				v.Level = math.Min(v.Level, g.level)
				v.Paused = v.Paused || g.pause
			}
		}
		c.view[t.key] = v
		if c.Trace != nil {
			c.Trace(t.key, v)
		}
	}
	return err
}

// readLS adds each LS tenant's histogram to its window, and finds the
// GPUs with an SLO on them.
func (c *Controller) readLS(all []tenant) map[string]*gpu {
	gpus := map[string]*gpu{}
	seen := map[string]bool{}
	above := aboveZero(all)
	c.view = map[Key]View{}
	for _, t := range all {
		if t.Class != ctl.ClassLS || t.Tide.SLO == (ctl.SLO{}) {
			continue
		}
		k, now := lsKey(t.Entry), requestsOf(t.Entry)
		if now.marked {
			k += " marked" // a window and calibration of its own
		}
		seen[k] = true
		now.step, now.at = c.step, c.now()
		s := append(c.hist[k], now)
		if len(s) > WindowSteps+1 {
			s = s[len(s)-WindowSteps-1:]
		}
		c.hist[k] = s
		v := lsView{tenant: t, samples: s}
		var calibrated bool
		v.ref, v.calibrating, calibrated = c.reference(k, v, above)
		v.target = Target(t.Tide.SLO, v.ref)
		w := window(s, 0)
		target := v.targetAt(w)
		attained, _ := Attainment(w.h, target)
		c.view[t.key] = View{SLO: t.Tide.SLO, Marked: now.marked, Target: target, Calibrating: v.calibrating, Calibrated: calibrated,
			P99: w.h.Quantile(quantile), Periods: w.h.Count(), Attainment: attained,
			Utilization: w.rho(), Estimate: w.estimate()}
		for _, name := range gpusOf(t.Entry) {
			if gpus[name] == nil {
				gpus[name] = &gpu{ready: true}
			}
			g := gpus[name]
			g.ls = append(g.ls, v)
			if v.target > 0 || v.calibrating {
				g.bound = true
				g.ready = g.ready && len(s) > 1
			}
		}
	}
	for k := range c.hist {
		if !seen[k] {
			delete(c.hist, k)
			delete(c.cal, k)
		}
	}
	c.zero = map[string]bool{}
	for name := range gpus {
		c.zero[name] = !above[name]
	}
	return gpus
}

// decide sets g's level from its LS tenants' windows: a tenant being
// calibrated with a period in its window sets level 0; else each tenant
// with a period in its window proposes a level (step), and the lowest
// binds; an estimate over Emergency times its target (over it, for a
// tenant that writes no busy time), or a tenant more than Saturated busy
// over its window or Backlog over its newest BacklogSteps steps, halves
// the level at once and starts the GPU's window afresh. After ZeroSteps
// steps at the bottom, a level the law would lower still, or a tenant
// crowded (over RefBusy busy, its estimate over Aim of its target), or an
// emergency, pauses the BE tenants too.
func (c *Controller) decide(name string, g *gpu) {
	if !g.bound || len(g.be) == 0 {
		delete(c.levels, name)
		delete(c.resume, name)
		delete(c.atZero, name)
		delete(c.rests, name)
		return
	}
	level, ok := c.levels[name]
	if !ok {
		level = current(g.be)
	}
	g.level = level
	if !g.ready {
		g.hold = true
		return
	}
	defer func() { c.levels[name] = g.level }()
	busy, calibrate, emergency, crowded, room := false, false, false, false, true
	next := math.Inf(1)
	for _, v := range g.ls {
		active := v.active(c.every) || v.TideStatus.State == ctl.TideBusy
		if v.calibrating {
			calibrate = calibrate || active
			busy = busy || active
			continue
		}
		if v.target == 0 {
			continue
		}
		if active {
			busy = true
		}
		w := window(v.samples, c.cut[name])
		if w.h.Count() == 0 {
			continue
		}
		target, est := v.targetAt(w), w.estimate()
		if w.rho() > Saturated || v.recent().rho() > Backlog || float64(est) > Emergency*float64(target) || w.busy <= 0 && est > target {
			emergency = true
		}
		proposed, roomy := step(g.level, w, v.last(), target)
		next = math.Min(next, proposed)
		crowded = crowded || w.rho() > RefBusy && est > time.Duration(Aim*float64(target))
		room = room && roomy
	}
	resume, resumed := c.resume[name]
	if busy {
		delete(c.resume, name)
	}
	switch {
	case !busy:
		delete(c.rests, name)
		if !resumed {
			c.resume[name] = g.level
		}
		g.level = 1
	case calibrate:
		g.level, g.pause = 0, true
	case resumed: // busy again: from the level it had when it went quiet
		g.level = resume
	case emergency:
		g.pause = c.atZero[name] >= ZeroSteps // less than nothing
		g.level *= Backoff
		c.cut[name] = c.step
	case math.IsInf(next, 1): // no period since the cut: as they are, a pause from the bottom too
		g.hold, g.pause = true, c.atZero[name] >= ZeroSteps
		return
	default:
		want := c.atZero[name] >= ZeroSteps && (next < MinShare || crowded) // less than nothing
		held := c.rest(name, want, room)
		if held {
			next = math.Min(next, g.level) // what the law would add while paused is not the BE's
		}
		g.pause = want || held
		g.level = math.Min(1, next)
	}
	if g.level < MinShare {
		g.level = 0
	}
	if g.level >= Bottom || calibrate {
		delete(c.atZero, name)
	} else {
		c.atZero[name]++
	}
}

// step is the level an LS tenant's window w proposes from level, and
// whether w is roomy: whether it leaves room for a BE, the law raising
// the level by its most (as at a load that has fallen; a rest ends at
// once where each LS tenant is). With its busy time known, it steers the
// tenant's utilization to Goal, that at which the estimate of w's periods
// is Aim of target: the level moves by a factor of exp(Gain * (goal -
// rho)), within MaxStep either way (from MinShare, where it is below),
// rho the utilization that w's requests a second give at periods as long
// as the newest step's (the window's where that had none), which a change
// of level moves within a step; roomy where it would move by MaxStep up.
// Without (a tenant that writes no busy time, whose estimate is its
// periods' p99): up by Raise under Headroom of target (over it, decide
// halves), and roomy there.
func step(level float64, w, last win, target time.Duration) (next float64, roomy bool) {
	if w.busy <= 0 {
		if float64(w.estimate()) < Headroom*float64(target) {
			return level + Raise, true
		}
		return level, false
	}
	rho := w.rho()
	if n := last.h.Count(); n > 0 {
		rho = w.rate() * last.h.Sum.Seconds() / float64(n)
	}
	d := Gain * (Goal(w.h, time.Duration(Aim*float64(target))) - rho)
	roomy = d >= math.Log(MaxStep)
	d = math.Max(-math.Log(MaxStep), math.Min(math.Log(MaxStep), d))
	return math.Max(level, MinShare) * math.Exp(d), roomy
}

// write sets each BE tenant's dials to the lowest level of its GPUs with
// an SLO, and puts back those of a steered one that no SLO binds; and
// each LS tenant's target where it moved (for carve ls and top).
func (c *Controller) write(all []tenant, gpus map[string]*gpu) error {
	var first error
	for _, t := range all {
		if t.Class == ctl.ClassLS {
			if v, ok := c.view[t.key]; ok && v.Target.Truncate(time.Microsecond) != t.TideStatus.SLOTarget {
				first = cmp.Or(first, edit(t.Path, func(h *ctl.Handle) error { return h.SetSLOTarget(v.Target) }))
			}
		}
		if t.Class != ctl.ClassBE {
			continue
		}
		level, bound, hold, pause := 1.0, false, false, false
		for _, name := range gpusOf(t.Entry) {
			if g := gpus[name]; g != nil && g.bound {
				bound, hold, pause = true, hold || g.hold, pause || g.pause
				level = math.Min(level, g.level)
			}
		}
		switch {
		case pause:
			until := c.mono() + PauseSteps*c.every
			first = cmp.Or(first, edit(t.Path, func(h *ctl.Handle) error { return h.Pause(until) }))
			c.paused[t.Path] = true
		case c.paused[t.Path]:
			first = cmp.Or(first, edit(t.Path, func(h *ctl.Handle) error { return h.Pause(0) }))
			delete(c.paused, t.Path)
		}
		var err error
		switch {
		case !bound && t.Steered != nil:
			err = edit(t.Path, func(h *ctl.Handle) error { return h.Unsteer() })
		case !bound || hold:
		default:
			share, queue := dials(level, t.Entry)
			if t.Steered == nil || t.Tide.Share != share || t.Tide.Queue != queue {
				err = edit(t.Path, func(h *ctl.Handle) error { return h.Steer(share, queue) })
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	for path := range c.paused { // the blocks gone since they were paused
		if !slices.ContainsFunc(all, func(t tenant) bool { return t.Path == path }) {
			delete(c.paused, path)
		}
	}
	return first
}

// edit opens the block path and runs f on it.
func edit(path string, f func(*ctl.Handle) error) error {
	h, err := ctl.OpenPath(path)
	if err != nil {
		return err
	}
	defer h.Close()
	return f(h)
}

// mono is the clock of BE pauses (Mono).
func (c *Controller) mono() time.Duration {
	if c.Mono != nil {
		return c.Mono()
	}
	return ctl.Mono()
}

// now is c's clock.
func (c *Controller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// gpusOf names the GPUs of e's partitions: by node block, else by UUID.
func gpusOf(e ctl.Entry) []string {
	var out []string
	for _, p := range e.Parts() {
		switch {
		case p.Node != "":
			out = append(out, p.Node)
		case p.GPU != "":
			out = append(out, p.GPU)
		default:
			out = append(out, "")
		}
	}
	return out
}

// claimed is the block e of a claim's process as the controller believes
// it: its class, SLO and GPUs are carve's record of the claim's
// reservation (root), never what the block says, which the claim's pod
// may write (an SLO of 10 us, or another GPU, would throttle every BE
// tenant there). Its busy periods, busy time and requests stay its own:
// a tenant's to report, as its busy state in the node block is.
func claimed(e ctl.Entry, root ctl.Snapshot) ctl.Entry {
	e.Class, e.Tide.SLO = root.Class, root.Tide.SLO
	e.GPU, e.Tide.Node, e.More = root.GPU, root.Tide.Node, root.More
	e.Mask, e.Live, e.SMs, e.Floor = root.Mask, root.Live, root.SMs, root.Floor
	return e
}

// lsKey names an LS tenant's block across steps: its file, and its
// process's start (a pid used again is another tenant).
func lsKey(e ctl.Entry) string {
	return e.Path + "@" + e.Created.String()
}
