// Probe, memmap's kernels on one GPU: L2 scans, pointer chases, lines
// labelled from each L2 side, coloured vector adds co-run under masks, L2
// set-aside, contention, readers and eviction timings.

package memmap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/hook"
	"github.com/carve-gpu/carve/internal/kernels"
	"github.com/carve-gpu/carve/internal/topo"
)

// Probe runs memmap's kernels on one GPU.
type Probe struct {
	dev    cuda.Device
	sms    int
	stream cuda.Stream
	scan   cuda.Function
	slice  cuda.Function
	chase  cuda.Function
	vadd   cuda.Function
	pair   cuda.Function
	cont   cuda.Function
	evict  cuda.Function
	done   cuda.Event
	hook   *hook.Hook // carve's own launch hook, for masked launches
}

// Open loads memmap's kernels on device ordinal (the calling goroutine is
// locked to its thread).
func Open(ordinal int) (*Probe, error) {
	dev, _, err := cuda.OpenPrimary(ordinal)
	if err != nil {
		return nil, err
	}
	p := &Probe{dev: dev}
	if p.sms, err = dev.Attr(cuda.AttrSMCount); err != nil {
		return nil, err
	}
	mod, err := kernels.Load("memmap")
	if err != nil {
		return nil, err
	}
	if p.scan, err = mod.Function("chunk_latency"); err != nil {
		return nil, err
	}
	if p.chase, err = mod.Function("chase"); err != nil {
		return nil, err
	}
	if p.slice, err = mod.Function("slice_latency"); err != nil {
		return nil, err
	}
	if p.vadd, err = mod.Function("vadd_lines"); err != nil {
		return nil, err
	}
	if p.pair, err = mod.Function("pair_latency"); err != nil {
		return nil, err
	}
	if p.cont, err = mod.Function("contend"); err != nil {
		return nil, err
	}
	if p.evict, err = mod.Function("evict"); err != nil {
		return nil, err
	}
	if p.stream, err = cuda.NewStream(); err != nil {
		return nil, err
	}
	p.done, err = cuda.NewEvent()
	return p, err
}

func (p *Probe) run(fn cuda.Function, l cuda.Launch) error {
	l.Stream = p.stream
	if err := fn.Launch(l); err != nil {
		return err
	}
	if err := p.done.Record(p.stream); err != nil {
		return err
	}
	return p.done.Synchronize()
}

// blockShared is the shared memory each scan block asks for: more than
// half of an SM's, so that no two blocks share an SM.
const blockShared = 120 << 10

// Pool maps pages physical pages of the allocation granularity and fills
// them with zeros.
func (p *Probe) Pool(pages int) (cuda.Pages, error) {
	pool, err := p.dev.MapPages(pages)
	if err != nil {
		return pool, err
	}
	return pool, pool.Base.Fill32(0, pool.Size*pool.Count/4)
}

// ScanL2 times every chunk of pool from one block on each SM (reps
// dependent L2 hits each, after a load that brings the chunk in).
func (p *Probe) ScanL2(pool cuda.Pages, chunk, reps int) (Scan, error) {
	if chunk < 4 || pool.Size%chunk != 0 {
		return Scan{}, fmt.Errorf("chunk of %d bytes: want a divisor of the %d-byte page", chunk, pool.Size)
	}
	chunks := pool.Size * pool.Count / chunk
	blocks := p.sms
	out, err := cuda.Alloc(4 * blocks * chunks)
	if err != nil {
		return Scan{}, err
	}
	defer out.Free()
	smids, err := cuda.Alloc(4 * blocks)
	if err != nil {
		return Scan{}, err
	}
	defer smids.Free()
	if err := p.scan.SetMaxDynamicShared(blockShared); err != nil {
		return Scan{}, err
	}
	base, n, c32, r32, po, ps := uint64(pool.Base), uint64(chunks), uint32(chunk), int32(reps), uint64(out), uint64(smids)
	err = p.run(p.scan, cuda.Launch{Grid: [3]uint32{uint32(blocks), 1, 1}, Block: [3]uint32{1, 1, 1}, Shared: blockShared,
		Args: []unsafe.Pointer{unsafe.Pointer(&base), unsafe.Pointer(&n), unsafe.Pointer(&c32), unsafe.Pointer(&r32), unsafe.Pointer(&po), unsafe.Pointer(&ps)}})
	if err != nil {
		return Scan{}, fmt.Errorf("chunk scan: %w", err)
	}
	lat := make([]uint32, blocks*chunks)
	if err := cuda.Download(lat, out); err != nil {
		return Scan{}, err
	}
	ids := make([]uint32, blocks)
	if err := cuda.Download(ids, smids); err != nil {
		return Scan{}, err
	}
	s := Scan{Chunk: chunk, PageSize: pool.Size}
	for b := range blocks {
		s.SMs = append(s.SMs, int(ids[b]))
		s.Lat = append(s.Lat, lat[b*chunks:(b+1)*chunks])
	}
	return s, nil
}

// Chase follows next (word indices) for steps loads from one thread and
// returns the mean cycles per load.
func (p *Probe) Chase(next []uint32, steps int) (float64, error) {
	d, err := cuda.Copy(next)
	if err != nil {
		return 0, err
	}
	defer d.Free()
	out, err := cuda.Alloc(8)
	if err != nil {
		return 0, err
	}
	defer out.Free()
	pd, n, po := uint64(d), uint64(steps), uint64(out)
	if err := p.run(p.chase, cuda.Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1},
		Args: []unsafe.Pointer{unsafe.Pointer(&pd), unsafe.Pointer(&n), unsafe.Pointer(&po)}}); err != nil {
		return 0, fmt.Errorf("chase: %w", err)
	}
	got := make([]uint32, 2)
	if err := cuda.Download(got, out); err != nil {
		return 0, err
	}
	return float64(got[0]), nil
}

// RandomCycle is a chase over words bytes/4 long visiting one word of
// every stride bytes in a random order (a single cycle through them all).
func RandomCycle(bytes, stride int, seed uint64) []uint32 {
	words, step := bytes/4, stride/4
	slots := words / step
	order := rand.New(rand.NewPCG(seed, 2)).Perm(slots)
	next := make([]uint32, words)
	for i := range slots {
		from, to := order[i]*step, order[(i+1)%slots]*step
		next[from] = uint32(to)
	}
	return next
}

// Sequential is a chase that steps stride bytes at a time through bytes.
func Sequential(bytes, stride int) []uint32 {
	words, step := bytes/4, stride/4
	next := make([]uint32, words)
	for i := 0; i < words; i += step {
		next[i] = uint32((i + step) % words)
	}
	return next
}

// LineBytes is the granularity at which colours are labelled and handed
// out: one warp's 32 floats.
const LineBytes = 128

// masked launches fn confined to mask through carve's own hook.
func (p *Probe) masked(mask topo.Disable, fn cuda.Function, l cuda.Launch) error {
	if p.hook == nil {
		h, err := hook.Install()
		if err != nil {
			return err
		}
		p.hook = h
	}
	p.hook.SetMask(&mask)
	defer p.hook.SetMask(nil)
	return fn.Launch(l)
}

// LabelLines times every line of pool from blocks SMs inside side[0]'s
// TPCs and again from as many inside side[1]'s (each block its own slice
// of lines, the same slices on both sides) and labels each line with the
// side it is near to (LabelFromSides).
func (p *Probe) LabelLines(pool cuda.Pages, side [2]topo.Disable, blocks, reps int) ([]int, float64, error) {
	lines := pool.Size * pool.Count / LineBytes
	if err := p.slice.SetMaxDynamicShared(blockShared); err != nil {
		return nil, 0, err
	}
	var lat [2][]uint32
	for s := range 2 {
		out, err := cuda.Alloc(4 * lines)
		if err != nil {
			return nil, 0, err
		}
		base, n, lb, r32, po := uint64(pool.Base), uint64(lines), uint32(LineBytes), int32(reps), uint64(out)
		l := cuda.Launch{Grid: [3]uint32{uint32(blocks), 1, 1}, Block: [3]uint32{1, 1, 1}, Shared: blockShared, Stream: p.stream,
			Args: []unsafe.Pointer{unsafe.Pointer(&base), unsafe.Pointer(&n), unsafe.Pointer(&lb), unsafe.Pointer(&r32), unsafe.Pointer(&po)}}
		if err := p.masked(side[s], p.slice, l); err != nil {
			return nil, 0, err
		}
		if err := p.done.Record(p.stream); err != nil {
			return nil, 0, err
		}
		if err := p.done.Synchronize(); err != nil {
			return nil, 0, fmt.Errorf("line scan from side %d: %w", s, err)
		}
		lat[s] = make([]uint32, lines)
		err = cuda.Download(lat[s], out)
		out.Free()
		if err != nil {
			return nil, 0, err
		}
	}
	labels, gap := LabelFromSides(lat[0], lat[1], blocks)
	return labels, gap, nil
}

// Vadd is one vector add over n floats, loops times: plain arrays (tables
// 0) or coloured ones (A, B, C the pool, tables of lines).
type Vadd struct {
	A, B, C    cuda.DevPtr
	TA, TB, TC cuda.DevPtr
	N          uint64
	Loops      int32
}

func (v *Vadd) launch(stream cuda.Stream) cuda.Launch {
	return cuda.Launch{Grid: [3]uint32{4096, 1, 1}, Block: [3]uint32{256, 1, 1}, Stream: stream,
		Args: []unsafe.Pointer{unsafe.Pointer(&v.A), unsafe.Pointer(&v.B), unsafe.Pointer(&v.C),
			unsafe.Pointer(&v.TA), unsafe.Pointer(&v.TB), unsafe.Pointer(&v.TC), unsafe.Pointer(&v.N), unsafe.Pointer(&v.Loops)}}
}

// CoRun times the victim reps times (after one warm-up) confined to
// victimMask, while, if interferer is not nil, one long launch of it runs
// confined to interfererMask on a stream of its own. It reports whether the
// interferer was still running when the last victim run ended.
func (p *Probe) CoRun(victim *Vadd, victimMask topo.Disable, interferer *Vadd, interfererMask topo.Disable, reps int) ([]float64, bool, error) {
	var other cuda.Stream
	if interferer != nil {
		var err error
		if other, err = cuda.NewStream(); err != nil {
			return nil, false, err
		}
		if err := p.masked(interfererMask, p.vadd, interferer.launch(other)); err != nil {
			return nil, false, err
		}
	}
	start, err := cuda.NewEvent()
	if err != nil {
		return nil, false, err
	}
	ms := make([]float64, 0, reps)
	for i := 0; i <= reps; i++ {
		if err := start.Record(p.stream); err != nil {
			return nil, false, err
		}
		if err := p.masked(victimMask, p.vadd, victim.launch(p.stream)); err != nil {
			return nil, false, err
		}
		if err := p.done.Record(p.stream); err != nil {
			return nil, false, err
		}
		if err := p.done.Synchronize(); err != nil {
			return nil, false, err
		}
		v, err := p.done.Since(start)
		if err != nil {
			return nil, false, err
		}
		if i > 0 {
			ms = append(ms, v)
		}
	}
	outlasted := true
	if interferer != nil {
		done, err := other.Done()
		if err != nil {
			return nil, false, err
		}
		outlasted = !done
		for !done { // wait for it without a blocking call that could hang
			time.Sleep(time.Millisecond)
			if done, err = other.Done(); err != nil {
				return nil, false, err
			}
		}
	}
	return ms, outlasted, nil
}

// CheckColoured runs vadd_lines on n floats in coloured memory (tables of
// three arrays' lines in pool) against the CPU: known values are written
// line by line, and the sum read back the same way.
func (p *Probe) CheckColoured(pool cuda.Pages, ta, tb, tc []uint32, n int) error {
	a, b := make([]float32, n), make([]float32, n)
	for i := range n {
		a[i], b[i] = float32(i), float32(2*i+1)
	}
	line := func(tab []uint32, i int) cuda.DevPtr { return pool.Base + cuda.DevPtr(int(tab[i/32])*LineBytes) }
	for i := 0; i < n; i += 32 {
		j := min(n, i+32)
		if err := cuda.Upload(line(ta, i), a[i:j]); err != nil {
			return err
		}
		if err := cuda.Upload(line(tb, i), b[i:j]); err != nil {
			return err
		}
	}
	var tabs [3]cuda.DevPtr
	for k, t := range [][]uint32{ta, tb, tc} {
		d, err := cuda.Copy(t)
		if err != nil {
			return err
		}
		defer d.Free()
		tabs[k] = d
	}
	v := Vadd{A: pool.Base, B: pool.Base, C: pool.Base, TA: tabs[0], TB: tabs[1], TC: tabs[2], N: uint64(n), Loops: 1}
	if err := p.run(p.vadd, v.launch(p.stream)); err != nil {
		return err
	}
	got := make([]float32, 32)
	for i := 0; i < n; i += 32 {
		j := min(n, i+32)
		if err := cuda.Download(got[:j-i], line(tc, i)); err != nil {
			return err
		}
		for k := i; k < j; k++ {
			if got[k-i] != a[k]+b[k] {
				return fmt.Errorf("coloured vadd: element %d is %g, want %g", k, got[k-i], a[k]+b[k])
			}
		}
	}
	return nil
}

// WithSetAside runs f with bytes of the L2 set aside for persisting
// accesses and the probe's victim stream marking hitRatio of its accesses
// to [base, base+size) persisting; everything is given back after.
func (p *Probe) WithSetAside(bytes int, base cuda.DevPtr, size int, hitRatio float32, f func() error) error {
	if err := cuda.SetPersistingL2(bytes); err != nil {
		return err
	}
	if err := p.stream.SetAccessWindow(base, size, hitRatio); err != nil {
		cuda.SetPersistingL2(0)
		return err
	}
	err := f()
	for _, undo := range []func() error{
		func() error { return p.stream.SetAccessWindow(0, 0, 0) },
		cuda.ResetPersistingL2,
		func() error { return cuda.SetPersistingL2(0) },
	} {
		if e := undo(); err == nil {
			err = e
		}
	}
	return err
}

// MaxSetAside returns the most L2 that may be set aside, and the largest
// access policy window.
func (p *Probe) MaxSetAside() (bytes, window int, err error) {
	if bytes, err = p.dev.Attr(cuda.AttrPersistingL2); err != nil {
		return 0, 0, err
	}
	window, err = p.dev.Attr(cuda.AttrAccessWindow)
	return bytes, window, err
}

// PairLatency times, for each offset, loads of the lines at base and at
// base + offset that both come from DRAM (the L2 copies dropped first),
// issued together: the least of reps tries, in cycles.
func (p *Probe) PairLatency(base cuda.DevPtr, offsets []uint64, reps int) ([]uint32, error) {
	d, err := cuda.Copy(offsets)
	if err != nil {
		return nil, err
	}
	defer d.Free()
	out, err := cuda.Alloc(4 * len(offsets))
	if err != nil {
		return nil, err
	}
	defer out.Free()
	pa, po, n, r, pout := uint64(base), uint64(d), int32(len(offsets)), int32(reps), uint64(out)
	if err := p.run(p.pair, cuda.Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1},
		Args: []unsafe.Pointer{unsafe.Pointer(&pa), unsafe.Pointer(&po), unsafe.Pointer(&n), unsafe.Pointer(&r), unsafe.Pointer(&pout)}}); err != nil {
		return nil, fmt.Errorf("pair latencies: %w", err)
	}
	lat := make([]uint32, len(offsets))
	return lat, cuda.Download(lat, out)
}

// Contention is one run of the contend kernel: hammer blocks (Threads
// threads each) load the lines at Hammer over and over from DRAM while the
// rest of the SMs time DRAM loads of the lines at Cand (Reps each).
type Contention struct {
	Hammer  []uint64 // byte offsets into the pool
	Hammers int      // blocks, one per SM; 0: the probers alone
	Threads int
	Cand    []uint64
	Probers int // blocks; Hammers + Probers at most the SMs
	Reps    int
}

// Contend runs c over pool and returns each candidate's mean DRAM load
// time in cycles.
func (p *Probe) Contend(pool cuda.Pages, c Contention) ([]uint32, error) {
	cd, err := cuda.Copy(c.Cand)
	if err != nil {
		return nil, err
	}
	defer cd.Free()
	return p.contend(pool, c, cd, len(c.Cand))
}

// contend runs c with its n candidates already on the GPU at cand.
func (p *Probe) contend(pool cuda.Pages, c Contention, cand cuda.DevPtr, n int) ([]uint32, error) {
	if c.Probers < 1 || c.Hammers < 0 || c.Hammers+c.Probers > p.sms || c.Reps < 1 || n == 0 {
		return nil, fmt.Errorf("contention with %d hammers and %d probers on %d SMs, %d candidates, %d reps: malformed",
			c.Hammers, c.Probers, p.sms, n, c.Reps)
	}
	if c.Hammers > 0 && (len(c.Hammer) == 0 || c.Threads < 1) {
		return nil, errors.New("hammers need lines and threads")
	}
	hd, err := cuda.Copy(c.Hammer)
	if err != nil {
		return nil, err
	}
	defer hd.Free()
	out, err := cuda.Alloc(4 * n)
	if err != nil {
		return nil, err
	}
	defer out.Free()
	sync, err := cuda.Copy(make([]uint32, 4))
	if err != nil {
		return nil, err
	}
	defer sync.Free()
	if err := p.cont.SetMaxDynamicShared(blockShared); err != nil {
		return nil, err
	}
	// the hammers stop by themselves after this many loads each: never a
	// hang if a prober cannot start
	limit := uint64(n/c.Probers+1) * uint64(c.Reps) * 64
	base, nh, hs, nc, reps, po, ps := uint64(pool.Base), int32(len(c.Hammer)), int32(c.Hammers), int32(n), int32(c.Reps), uint64(out), uint64(sync)
	h, cp := uint64(hd), uint64(cand)
	threads := uint32(max(1, c.Threads))
	err = p.run(p.cont, cuda.Launch{Grid: [3]uint32{uint32(c.Hammers + c.Probers), 1, 1}, Block: [3]uint32{threads, 1, 1}, Shared: blockShared,
		Args: []unsafe.Pointer{unsafe.Pointer(&base), unsafe.Pointer(&h), unsafe.Pointer(&nh), unsafe.Pointer(&hs),
			unsafe.Pointer(&cp), unsafe.Pointer(&nc), unsafe.Pointer(&reps), unsafe.Pointer(&limit), unsafe.Pointer(&po), unsafe.Pointer(&ps)}})
	if err != nil {
		return nil, fmt.Errorf("contention: %w", err)
	}
	st := make([]uint32, 4)
	if err := cuda.Download(st, sync); err != nil {
		return nil, err
	}
	if st[2] > 0 {
		return nil, fmt.Errorf("contention: %d of %d hammers stopped before the probers were done", st[2], c.Hammers)
	}
	t := make([]uint32, n)
	return t, cuda.Download(t, out)
}

// Timer is a memmap.Timer over the candidates cand of pool: half of the
// SMs hammer, the other half time reps loads of each candidate (the same
// number of probers when nothing is hammered). Free releases the
// candidates' copy on the GPU.
func (p *Probe) Timer(pool cuda.Pages, cand []uint64, reps int) (time Timer, free func(), err error) {
	cd, err := cuda.Copy(cand)
	if err != nil {
		return nil, nil, err
	}
	hammers := p.sms / 2
	time = func(hammer []uint64, threads int) ([]uint32, error) {
		c := Contention{Hammer: hammer, Hammers: hammers, Threads: threads, Probers: p.sms - hammers, Reps: reps}
		if len(hammer) == 0 {
			c.Hammers = 0
		}
		return p.contend(pool, c, cd, len(cand))
	}
	return time, func() { cd.Free() }, nil
}

// Readers is FGPU's Fig. 8 experiment: one SM loads the primary lines
// from DRAM (reps each, one at a time) while n other SMs load the
// secondary lines from DRAM without pause (threads each). It returns the
// primary's mean cycles for each of its lines.
func (p *Probe) Readers(pool cuda.Pages, primary, secondary []uint64, n, threads, reps int) ([]uint32, error) {
	return p.Contend(pool, Contention{Hammer: secondary, Hammers: n, Threads: threads, Cand: primary, Probers: 1, Reps: reps})
}

// SMs is the number of SMs of the probe's GPU.
func (p *Probe) SMs() int { return p.sms }

// Evict loads the target lines, then every line of [from, to) of pool
// from one block, then the lines at extra, then times each target again
// (cycles: an L2 hit or a DRAM access).
func (p *Probe) Evict(pool cuda.Pages, targets []uint64, from, to uint64, extra []uint64) ([]uint32, error) {
	if to > uint64(pool.Size*pool.Count) || from > to || len(targets) == 0 {
		return nil, fmt.Errorf("eviction sweep [%d, %d) in a pool of %d bytes: malformed", from, to, pool.Size*pool.Count)
	}
	td, err := cuda.Copy(targets)
	if err != nil {
		return nil, err
	}
	defer td.Free()
	xd, err := cuda.Copy(extra)
	if err != nil {
		return nil, err
	}
	defer xd.Free()
	out, err := cuda.Alloc(4 * len(targets))
	if err != nil {
		return nil, err
	}
	defer out.Free()
	base, tp, nt, lb, xp, nx, po := uint64(pool.Base), uint64(td), int32(len(targets)), uint32(LineBytes), uint64(xd), int32(len(extra)), uint64(out)
	if err := p.run(p.evict, cuda.Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1024, 1, 1},
		Args: []unsafe.Pointer{unsafe.Pointer(&base), unsafe.Pointer(&tp), unsafe.Pointer(&nt), unsafe.Pointer(&from), unsafe.Pointer(&to),
			unsafe.Pointer(&lb), unsafe.Pointer(&xp), unsafe.Pointer(&nx), unsafe.Pointer(&po)}}); err != nil {
		return nil, fmt.Errorf("eviction sweep: %w", err)
	}
	t := make([]uint32, len(targets))
	return t, cuda.Download(t, out)
}

// Evicted is a memmap.Evicted for the line at target of pool: the target
// counts as evicted when its second load takes more than threshold cycles
// in most of votes tries.
func (p *Probe) Evicted(pool cuda.Pages, target uint64, threshold float64, votes int) Evicted {
	return func(from, end uint64, extra []uint64) (bool, error) {
		yes := 0
		for range votes {
			t, err := p.Evict(pool, []uint64{target}, from, end, extra)
			if err != nil {
				return false, err
			}
			if float64(t[0]) > threshold {
				yes++
			}
		}
		return 2*yes > votes, nil
	}
}
