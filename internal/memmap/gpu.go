package memmap

import (
	"fmt"
	"math/rand/v2"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/kernels"
)

// Probe runs memmap's kernels on one GPU.
type Probe struct {
	dev    cuda.Device
	sms    int
	stream cuda.Stream
	scan   cuda.Function
	chase  cuda.Function
	done   cuda.Event
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
	src, err := kernels.PTX("memmap")
	if err != nil {
		return nil, err
	}
	mod, err := cuda.LoadPTX(src)
	if err != nil {
		return nil, fmt.Errorf("loading the memmap kernels: %w", err)
	}
	if p.scan, err = mod.Function("chunk_latency"); err != nil {
		return nil, err
	}
	if p.chase, err = mod.Function("chase"); err != nil {
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
	d, err := cuda.Alloc(4 * len(next))
	if err != nil {
		return 0, err
	}
	defer d.Free()
	if err := cuda.Upload(d, next); err != nil {
		return 0, err
	}
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
