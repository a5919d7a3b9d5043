// The stamp kernel, which writes the GPU's global timer as it starts: the
// host and GPU clocks related, and when a launched kernel began running,
// for launch-overhead workers.

package workload

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/carve-gpu/carve/internal/cuda"
)

// Stamper launches the stamp kernel, one thread that writes the GPU's
// global timer as it starts, to tell when a launched kernel began running.
// The global timer is not the host's clock (on the lent VM they differ by
// about 0.3 ms), so ClockOffset relates the two first.
type Stamper struct {
	s       *Session
	stamp   cuda.Function
	sync    cuda.Function
	out     cuda.DevPtr
	n       int
	mapped  cuda.HostMapped
	offset  int64 // host ns - GPU ns, an upper bound; 0 until ClockOffset
	offsetN int
}

// NewStamper prepares n stamps in a session of the stamp module.
func NewStamper(s *Session, n int) (*Stamper, error) {
	st := &Stamper{s: s, n: n}
	var err error
	if st.stamp, err = s.function("stamp"); err != nil {
		return nil, err
	}
	if st.sync, err = s.function("clock_sync"); err != nil {
		return nil, err
	}
	if st.out, err = cuda.Alloc(8 * n); err != nil {
		return nil, err
	}
	st.mapped, err = cuda.AllocHostMapped(8)
	return st, err
}

// ClockOffset runs clock_sync for d while reading its mapped word, and
// keeps the least (host time after the read - GPU time read): the true
// offset plus the time a write from the GPU takes to become visible (about
// a microsecond over PCIe). Times from Start are thus late by at most that.
func (st *Stamper) ClockOffset(d time.Duration) (int64, error) {
	word := (*uint64)(st.mapped.Host)
	atomic.StoreUint64(word, 0)
	dp, ns := uint64(st.mapped.Dev), uint64(d.Nanoseconds())
	if err := st.s.launch(st.sync, grid1(1), [3]uint32{1, 1, 1}, ptrs(&dp, &ns)...); err != nil {
		return 0, err
	}
	// Poll without other driver calls (a stream query under MPS takes tens
	// of microseconds) for d from the first value seen, then wait.
	best, seen, last := int64(math.MaxInt64), 0, uint64(0)
	var first int64
	deadline := time.Now().Add(2 * time.Second).UnixNano()
	for {
		v := atomic.LoadUint64(word)
		th := time.Now().UnixNano()
		if v != 0 && v != last {
			if seen == 0 {
				first = th
			}
			best, seen, last = min(best, th-int64(v)), seen+1, v
		}
		if seen > 0 && th-first > int64(ns-ns/10) {
			break
		}
		if seen == 0 && th > deadline {
			return 0, errors.New("clock_sync did not start within 2 s")
		}
	}
	if err := st.s.end.Record(st.s.stream); err != nil {
		return 0, err
	}
	if err := st.s.end.Synchronize(); err != nil {
		return 0, err
	}
	if seen < 100 {
		return 0, fmt.Errorf("only %d timer values seen in %v: cannot relate the clocks", seen, d)
	}
	st.offset, st.offsetN = best, seen
	return best, nil
}

// FirstKernel launches one stamp and returns the host time (ns since the
// epoch) at which it started running, by the offset ClockOffset finds
// after it.
func (st *Stamper) FirstKernel() (int64, error) {
	p, i := uint64(st.out), int32(0)
	if err := st.s.launch(st.stamp, grid1(1), [3]uint32{1, 1, 1}, ptrs(&p, &i)...); err != nil {
		return 0, err
	}
	g := make([]uint64, 1)
	if err := cuda.Download(g, st.out); err != nil { // waits for the kernel
		return 0, err
	}
	off, err := st.ClockOffset(2 * time.Millisecond)
	return int64(g[0]) + off, err
}

// Latencies launches the stamp kernel n times, each on an idle GPU, and
// returns for each the ns from just before the launch call to the kernel's
// start, and the ns the launch call itself took on the host.
func (st *Stamper) Latencies() (latency, host []float64, err error) {
	if st.offsetN == 0 {
		return nil, nil, errors.New("ClockOffset first")
	}
	p := uint64(st.out)
	t0 := make([]int64, st.n)
	host = make([]float64, st.n)
	for i := range st.n {
		i32 := int32(i)
		args := ptrs(&p, &i32)
		t0[i] = time.Now().UnixNano()
		if err := st.stamp.Launch(cuda.Launch{Grid: grid1(1), Block: [3]uint32{1, 1, 1}, Stream: st.s.stream, Args: args}); err != nil {
			return nil, nil, err
		}
		host[i] = float64(time.Now().UnixNano() - t0[i])
		if err := st.s.end.Record(st.s.stream); err != nil {
			return nil, nil, err
		}
		if err := st.s.end.Synchronize(); err != nil {
			return nil, nil, err
		}
	}
	g := make([]uint64, st.n)
	if err := cuda.Download(g, st.out); err != nil {
		return nil, nil, err
	}
	latency = make([]float64, st.n)
	for i := range g {
		latency[i] = float64(int64(g[i]) + st.offset - t0[i])
	}
	return latency, host, nil
}

// LaunchSamples is what one launch-overhead worker measured (ns).
type LaunchSamples struct {
	LatencyNS []float64 `json:"latency_ns"` // launch call to kernel start
	HostNS    []float64 `json:"host_ns"`    // time in the launch call
	OffsetNS  int64     `json:"offset_ns"`  // host clock - GPU timer bound
	Seen      int       `json:"timer_values_seen"`
}

// MeasureLaunches relates the clocks and times n launches in s.
func MeasureLaunches(s *Session, n int) (LaunchSamples, error) {
	st, err := NewStamper(s, n)
	if err != nil {
		return LaunchSamples{}, err
	}
	// One launch of each kernel first, so that neither's first-use cost counts.
	if _, err := st.FirstKernel(); err != nil {
		return LaunchSamples{}, err
	}
	if _, err := st.ClockOffset(5 * time.Millisecond); err != nil {
		return LaunchSamples{}, err
	}
	lat, host, err := st.Latencies()
	return LaunchSamples{LatencyNS: lat, HostNS: host, OffsetNS: st.offset, Seen: st.offsetN}, err
}

// OpenStamp opens the stamp kernels in device's primary context, or in a
// green context of about greenShare of its SMs when greenShare > 0.
func OpenStamp(device int, greenShare float64) (*Session, error) {
	if greenShare > 0 {
		groups, rest, err := GreenGroups(device)
		if err != nil {
			return nil, err
		}
		a, _ := GreenShares(groups, rest, greenShare)
		s, _, err := OpenGreen(device, "stamp", a...)
		return s, err
	}
	_, ctx, err := cuda.OpenPrimary(device)
	if err != nil {
		return nil, err
	}
	return OpenIn(ctx, "stamp")
}
