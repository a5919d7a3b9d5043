// The plant the controller's tests steer, on a virtual clock of steps
// (each a DefaultInterval): LS tenants whose busy periods last longer the
// more share the BE tenants beside them have (period = base * (1 + k *
// share) * jitter + the BE's queue), written into real control blocks'
// histograms through ctl's mirror of the block, as the shim's poller
// writes them. These batch tenants write no busy time nor requests (their
// utilization reads 0). A serial server (serial) is an LS tenant that
// serves Poisson arrivals one at a time, each request its own busy period
// (or, merged, each run of queued requests one, as the shim's poller sees
// a server that launches its next request as the last ends), and writes
// its busy time and requests as the shim does, and with marks each
// request as a marked range; the plant keeps its requests' latencies,
// queueing included.

package slo_test

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/slo"
)

// record adds a busy period of d to h, as the shim's poller does.
func record(h *ctl.BlockHist, d time.Duration) {
	i := 0
	for i < ctl.HistBuckets-1 && d >= ctl.HistBound(i) {
		i++
	}
	atomic.AddUint64(&h.Bucket[i], 1)
	atomic.AddUint64(&h.SumNS, uint64(d))
}

// lsPlant is an LS tenant of the plant.
type lsPlant struct {
	pid   int
	kill  func()
	b     *ctl.Block
	base  time.Duration // its period alone
	k     float64       // how much longer at a BE share of 1
	rate  int           // periods a step; 0: idle
	long  bool          // a period in flight longer than the window
	steps [][]time.Duration
}

// plant is the tenants of one GPU (node "node-A") and the controller.
type plant struct {
	t    *testing.T
	dir  string
	c    *slo.Controller
	ls   []*lsPlant
	srv  []*serial
	be   []*ctl.Handle
	beb  []*ctl.Block // be's blocks, mapped
	step int
	now  time.Duration // the virtual clock: step * DefaultInterval
	// idle is the kernel the BE tenants run while a serial server is idle
	// (0: none): a request that finds the server idle waits for the rest
	// of one, a time uniform in [0, idle), unless the BE tenants are
	// paused (ctl.Handle.Pause, on the plant's clock)
	idle time.Duration
}

const node = "node-A"

func newPlant(t *testing.T) *plant {
	p := &plant{t: t, dir: t.TempDir()}
	p.restart()
	return p
}

// restart gives the plant a new controller, on its clock.
func (p *plant) restart() {
	p.c = slo.New(p.dir)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.c.Now = func() time.Time { return epoch.Add(p.now) }
	p.c.Mono = func() time.Duration { return p.now }
}

// paused says whether every BE tenant is paused (there is one).
func (p *plant) paused() bool {
	for _, b := range p.beb {
		if time.Duration(atomic.LoadUint64(&b.PauseUntilNS)) <= p.now {
			return false
		}
	}
	return len(p.beb) > 0
}

// idleKernel is the kernel a request that finds the server idle waits the
// rest of: p.idle, unless there is no BE tenant or each is paused.
func (p *plant) idleKernel() time.Duration {
	if len(p.beb) == 0 || p.paused() {
		return 0
	}
	return p.idle
}

func (p *plant) create(pol ctl.Policy, nodes ...string) (*ctl.Handle, int, func()) {
	p.t.Helper()
	if err := pol.Normalize(ctl.FieldNames); err != nil {
		p.t.Fatal(err)
	}
	pid, kill := ctltest.Sleeper(p.t)
	in := ctl.Init{PID: pid, Comm: []string{"plant"}}
	for _, n := range nodes {
		in.Parts = append(in.Parts, ctl.Part{Node: n, GPU: "GPU-" + uuidOf(n),
			Mask: [4]uint32{}, Live: [4]uint32{0xffff}})
	}
	pol.Apply(&in)
	h, err := ctl.Create(p.dir, in)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { h.Close() })
	return h, pid, kill
}

// uuidOf is a GPU UUID for the node block name n.
func uuidOf(n string) string {
	return map[string]string{"node-A": "aaaaaaaa-0000-0000-0000-000000000000", "node-B": "bbbbbbbb-0000-0000-0000-000000000000"}[n]
}

// addLS adds an LS tenant on node with SLO s.
func (p *plant) addLS(s ctl.SLO, base time.Duration, k float64, rate int) *lsPlant {
	h, pid, kill := p.create(ctl.Policy{Class: ctl.ClassLS, SLO: s}, node)
	l := &lsPlant{pid: pid, kill: kill, b: ctltest.MapBlock(p.t, h.Path), base: base, k: k, rate: rate}
	p.ls = append(p.ls, l)
	return l
}

// addBE adds a BE tenant on nodes that asked share and queue.
func (p *plant) addBE(share float64, queue time.Duration, nodes ...string) *ctl.Handle {
	if len(nodes) == 0 {
		nodes = []string{node}
	}
	h, _, _ := p.create(ctl.Policy{Class: ctl.ClassBE, Share: share, Queue: queue, Inflight: 8}, nodes...)
	p.be, p.beb = append(p.be, h), append(p.beb, ctltest.MapBlock(p.t, h.Path))
	return h
}

// share and queue are the BE tenants' on the plant's GPU: the most of each.
func (p *plant) dials() (share float64, queue time.Duration) {
	for _, h := range p.be {
		s := h.Snapshot()
		share, queue = max(share, s.Tide.Share), max(queue, s.Tide.Queue)
	}
	return share, queue
}

// run advances n steps: each LS tenant serves its periods, then the
// controller steps.
func (p *plant) run(n int) {
	p.t.Helper()
	for range n {
		share, queue := p.dials()
		if p.paused() { // nothing of the BE's runs, nor is queued
			share, queue = 0, 0
		}
		for _, l := range p.ls {
			var this []time.Duration
			for i := range l.rate {
				jitter := 1 + 0.02*float64(i%10)
				d := time.Duration(float64(l.base)*(1+l.k*share)*jitter) + queue
				record(&l.b.BusyHist, d)
				this = append(this, d)
			}
			state := uint32(ctl.TideIdle)
			if l.long {
				state = ctl.TideBusy
			}
			atomic.StoreUint32(&l.b.TideState, state)
			l.steps = append(l.steps, this)
		}
		for _, v := range p.srv {
			v.serve(p.now+slo.DefaultInterval, share, queue, p.idleKernel(), len(p.be) == 0)
		}
		p.now += slo.DefaultInterval
		if err := p.c.Step(); err != nil {
			p.t.Fatalf("step %d: %v", p.step, err)
		}
		p.step++
	}
}

// p99 is the true p99 of l's periods over the last n steps (0: none).
func (l *lsPlant) p99(n int) time.Duration {
	var all []time.Duration
	for _, s := range l.steps[max(0, len(l.steps)-n):] {
		all = append(all, s...)
	}
	return quantile(all)
}

// serial is an LS tenant of the plant that serves one request at a time:
// arrivals are Poisson at rate a second (from a seeded generator, on the
// plant's clock), each request's service is base * (1 + k * share) *
// jitter + the BE's queue, and each is its own busy period (the server
// drains the GPU after each, as carve bench serve's does). Its block
// counts a request when it starts and its busy time and period when it
// ends, as the shim does; an alone period too while no BE tenant is on
// the plant.
type serial struct {
	pid     int
	b       *ctl.Block
	rng     *rand.Rand
	rate    float64       // arrivals a second; 0: none
	base    time.Duration // mean service alone
	k       float64       // how much longer at a BE share of 1
	tail    bool          // jitter 0.5 + 0.5 * an exponential (mean 1), not uniform in [0.9, 1.1]
	merge   float64       // the chance that a request begun as the last ended continues its busy period (mrng's)
	mrng    *rand.Rand
	marks   bool          // each request is a marked range (its program marks them: ctl.Policy.Mark)
	open    time.Duration // the busy period so far, of the requests done in it
	warm    time.Duration // until then its services are warmBy times as long (warming up)
	warmBy  float64
	next    time.Duration // the next arrival (with rate 0: none)
	wait    []time.Duration
	cur     *request // in service
	now     time.Duration
	periods []time.Duration   // every period, in order
	lat     [][]time.Duration // by step: the latencies of the requests done in it
}

// request is one the server took from its queue.
type request struct {
	arrived, done, service time.Duration
}

// addSerial adds a serial server on node with SLO s, at rate arrivals a
// second, seeded with seed.
func (p *plant) addSerial(s ctl.SLO, base time.Duration, k, rate float64, seed uint64) *serial {
	return p.addServer(ctl.Policy{Class: ctl.ClassLS, SLO: s}, base, k, rate, seed)
}

// addServer adds a serial server on node with policy pol: with a mark, it
// marks each request, NVTX attached to its shim.
func (p *plant) addServer(pol ctl.Policy, base time.Duration, k, rate float64, seed uint64) *serial {
	h, pid, _ := p.create(pol, node)
	v := &serial{pid: pid, b: ctltest.MapBlock(p.t, h.Path), rng: rand.New(rand.NewPCG(seed, 1)), base: base, k: k, now: p.now,
		marks: pol.Mark != "", mrng: rand.New(rand.NewPCG(seed, 2))}
	if v.marks {
		atomic.StoreUint32(&v.b.MarkState, ctl.MarkAttached)
	}
	v.load(rate)
	p.srv = append(p.srv, v)
	return v
}

// load sets the arrival rate from now on.
func (v *serial) load(rate float64) {
	v.rate = rate
	v.next = v.now + v.gap()
}

// gap is the time to the next arrival.
func (v *serial) gap() time.Duration {
	if v.rate == 0 {
		return time.Duration(1<<62) - v.now
	}
	return time.Duration(v.rng.ExpFloat64() / v.rate * float64(time.Second))
}

// serve runs the server up to until, its requests started at share and
// queue, one that finds it idle after the rest of a BE kernel of idle.
func (v *serial) serve(until time.Duration, share float64, queue, idle time.Duration, alone bool) {
	var done []time.Duration
	for {
		switch {
		case v.next < until && (v.cur == nil || v.next < v.cur.done):
			v.wait = append(v.wait, v.next)
			v.now = v.next
			v.next += v.gap()
		case v.cur != nil && v.cur.done < until:
			v.now = v.cur.done
			if v.marks {
				record(&v.b.MarkHist, v.cur.service)
			}
			v.open += v.cur.service
			if len(v.wait) == 0 || v.mrng.Float64() >= v.merge { // the period ends: it drained, or was seen to
				record(&v.b.BusyHist, v.open)
				if alone {
					record(&v.b.AloneHist, v.open)
				}
				atomic.AddUint64(&v.b.BusyNS, uint64(v.open))
				v.periods = append(v.periods, v.open)
				v.open = 0
			}
			done = append(done, v.cur.done-v.cur.arrived)
			v.cur = nil
		default:
			v.now = until
			state := uint32(ctl.TideIdle)
			if v.cur != nil {
				state = ctl.TideBusy
			}
			atomic.StoreUint32(&v.b.TideState, state)
			v.lat = append(v.lat, done)
			return
		}
		if v.cur == nil && len(v.wait) > 0 {
			jitter := 0.9 + 0.2*v.rng.Float64()
			if v.tail {
				jitter = 0.5 + 0.5*v.rng.ExpFloat64()
			}
			service := time.Duration(float64(v.base)*(1+v.k*share)*jitter) + queue
			if v.now < v.warm {
				service = time.Duration(float64(service) * v.warmBy)
			}
			if idle > 0 && v.wait[0] == v.now { // it found the server idle
				service += time.Duration(v.rng.Float64() * float64(idle))
			}
			v.cur = &request{arrived: v.wait[0], done: v.now + service, service: service}
			v.wait = v.wait[1:]
			if v.open == 0 { // from idle
				atomic.AddUint64(&v.b.Requests, 1)
			}
		}
	}
}

// p99 is the p99 of the latencies of the requests done in the last n
// steps, queueing included (0: none).
func (v *serial) p99(n int) time.Duration {
	var all []time.Duration
	for _, s := range v.lat[max(0, len(v.lat)-n):] {
		all = append(all, s...)
	}
	return quantile(all)
}

// busyP99 is the p99 of the last n busy periods (0: none).
func (v *serial) busyP99(n int) time.Duration {
	return quantile(slices.Clone(v.periods[max(0, len(v.periods)-n):]))
}

// quantile is the p99 of d, which it sorts (0: empty).
func quantile(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)*99+99)/100-1]
}
