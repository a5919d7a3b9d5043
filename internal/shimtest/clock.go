// Clock, a test's side of the virtual clock of the shim's test build
// (shim/test/vclock.h): the time it steps, the threads of the processes on
// it, and the commands sent to a driver process and answered on it.

package shimtest

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The virtual clock's file, as shim/test/vclock.h lays it out.
const (
	clockEnv   = "CARVE_TEST_CLOCK"
	clockMagic = 0x4b4c4356
	clockSize  = 4096
	clockProcs = 64

	offMagic = 0
	offSeq   = 4
	offNow   = 8
	offQuiet = 16
	offProcs = 64
	procSize = 32 // pid, running, waiting int32; pad; waits uint64; pad
)

// ClockStart is a Clock's first time, in ns of the shim's monotonic
// clock: far from 0, which the shim reads as "never".
const ClockStart = 1000 * time.Second

// Clock is a test's side of the virtual clock of the shim's test build
// (shim/test/vclock.h): a file that the test build of libcarve.so, the fake
// driver and the driver program map where CARVE_TEST_CLOCK (Env) names it.
// Their clocks read its time, their naps, yields and synchronizations wait
// for it, and it moves only when the test advances it: by Step at a time,
// once every thread of theirs is still (waiting for the clock, or parked
// outside it). Each wait for that has a real-time limit (Limit) that fails
// the test, naming the processes that still ran, instead of hanging.
//
// A driver process's main thread counts as running while it has a command
// to answer: Wake it before sending one, Park it once the answer is read;
// it counts as running from its start until its first Park.
type Clock struct {
	Path  string
	Step  time.Duration // how far Advance moves the time
	Limit time.Duration // real time the threads may take to be still

	t     testing.TB
	mem   []byte
	mu    sync.RWMutex // Poke, from other goroutines, against the unmapping
	every []func(now time.Duration)
	at    []timed
	names map[int]string
}

type timed struct {
	at time.Duration
	f  func()
}

// NewClock makes a clock file in dir, at ClockStart, moving by step.
func NewClock(t testing.TB, dir string, step time.Duration) *Clock {
	t.Helper()
	path := filepath.Join(dir, "vclock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(clockSize); err != nil {
		t.Fatal(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, clockSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	c := &Clock{Path: path, Step: step, Limit: 10 * time.Second, t: t, mem: mem, names: map[int]string{}}
	atomic.StoreUint64(c.u64(offNow), uint64(ClockStart))
	atomic.StoreUint32(c.u32(offMagic), clockMagic)
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		syscall.Munmap(mem)
		c.mem = nil
	})
	return c
}

func (c *Clock) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&c.mem[off])) }
func (c *Clock) i32(off int) *int32  { return (*int32)(unsafe.Pointer(&c.mem[off])) }
func (c *Clock) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&c.mem[off])) }

// slot fields of process slot i
func (c *Clock) pid(i int) *int32     { return c.i32(offProcs + i*procSize) }
func (c *Clock) running(i int) *int32 { return c.i32(offProcs + i*procSize + 4) }
func (c *Clock) waiting(i int) *int32 { return c.i32(offProcs + i*procSize + 8) }
func (c *Clock) waits(i int) *uint64  { return c.u64(offProcs + i*procSize + 16) }

// Env is the variable that puts a process on the clock.
func (c *Clock) Env() string { return clockEnv + "=" + c.Path }

// Now is the clock's time, in ns of the shim's monotonic clock.
func (c *Clock) Now() time.Duration { return time.Duration(atomic.LoadUint64(c.u64(offNow))) }

// Name names pid in messages.
func (c *Clock) Name(pid int, name string) { c.names[pid] = name }

func (c *Clock) slot(pid int) int {
	c.t.Helper()
	for i := range clockProcs {
		if int(atomic.LoadInt32(c.pid(i))) == pid {
			return i
		}
	}
	c.t.Fatalf("process %d has no slot on the virtual clock (is it the test build of the shim, with %s?)", pid, c.Env())
	return -1
}

// Wake counts one more thread of pid as running: its main thread, about to
// be sent a command.
func (c *Clock) Wake(pid int) { atomic.AddInt32(c.running(c.slot(pid)), 1) }

// Park counts one fewer: its main thread, whose answer has been read.
func (c *Clock) Park(pid int) {
	c.t.Helper()
	if atomic.AddInt32(c.running(c.slot(pid)), -1) < 0 {
		c.t.Fatalf("process %d parked more threads than ran", pid)
	}
	c.Poke()
}

// Release frees the slot of pid, a process that has ended: its threads
// count no more.
func (c *Clock) Release(pid int) {
	for i := range clockProcs {
		if int(atomic.LoadInt32(c.pid(i))) == pid {
			atomic.StoreInt32(c.running(i), 0)
			atomic.StoreInt32(c.waiting(i), 0)
			atomic.StoreInt32(c.pid(i), 0)
		}
	}
	c.Poke()
}

// Every runs f at every step, with the new time, before any thread sees it.
func (c *Clock) Every(f func(now time.Duration)) { c.every = append(c.every, f) }

// At runs f at the first step that reaches t, before any thread sees it.
func (c *Clock) At(t time.Duration, f func()) {
	c.at = append(c.at, timed{t, f})
	slices.SortStableFunc(c.at, func(a, b timed) int { return cmp.Compare(a.at, b.at) })
}

// Poke wakes a wait of Settle or Drive to look again: something besides
// the clock's threads changed (an answer came).
func (c *Clock) Poke() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mem == nil { // the test has ended
		return
	}
	atomic.AddUint32(c.u32(offQuiet), 1)
	futex(c.u32(offQuiet), 1 /* FUTEX_WAKE */, 1<<30, 0)
}

// still says whether every thread on the clock waits for it or is parked,
// and how many wait for it.
func (c *Clock) still() (bool, int) {
	waiting := 0
	for i := range clockProcs {
		if atomic.LoadInt32(c.pid(i)) == 0 {
			continue
		}
		if atomic.LoadInt32(c.running(i)) != 0 {
			return false, 0
		}
		waiting += int(atomic.LoadInt32(c.waiting(i)))
	}
	return true, waiting
}

// State describes the processes on the clock, for messages.
func (c *Clock) State() string {
	var b strings.Builder
	fmt.Fprintf(&b, "virtual time %v", c.Now()-ClockStart)
	for i := range clockProcs {
		pid := int(atomic.LoadInt32(c.pid(i)))
		if pid == 0 {
			continue
		}
		name := c.names[pid]
		if name == "" {
			name = "pid"
		}
		fmt.Fprintf(&b, "; %s %d: %d running, %d waiting for the clock (%d waits)", name, pid,
			atomic.LoadInt32(c.running(i)), atomic.LoadInt32(c.waiting(i)), atomic.LoadUint64(c.waits(i)))
	}
	return b.String()
}

// Settle waits until every thread on the clock is still.
func (c *Clock) Settle() {
	c.t.Helper()
	c.Drive("the threads on the clock to be still", func() bool { s, _ := c.still(); return s }, 0)
}

// Advance settles, then moves the time by Step: every hook of Every and At
// due runs, then the waiting threads wake to the new time.
func (c *Clock) Advance() {
	c.t.Helper()
	c.Settle()
	c.step()
}

func (c *Clock) step() {
	for i := range clockProcs { // every waiter counts as running again, woken
		if atomic.LoadInt32(c.pid(i)) != 0 {
			atomic.AddInt32(c.running(i), atomic.SwapInt32(c.waiting(i), 0))
		}
	}
	now := c.Now() + c.Step
	atomic.StoreUint64(c.u64(offNow), uint64(now))
	for _, f := range c.every {
		f(now)
	}
	for len(c.at) > 0 && c.at[0].at <= now {
		f := c.at[0].f
		c.at = c.at[1:]
		f()
	}
	atomic.AddUint32(c.u32(offSeq), 1)
	futex(c.u32(offSeq), 1 /* FUTEX_WAKE */, 1<<30, 0)
}

// RunFor advances the clock by d (to within a step).
func (c *Clock) RunFor(d time.Duration) {
	c.t.Helper()
	end := c.Now() + d
	for c.Now() < end {
		c.Advance()
	}
	c.Settle()
}

// Drive advances the clock, a step whenever every thread on it is still,
// until done says so (what is awaited: for messages). It fails the test if
// that takes more than max of virtual time (0: done must hold without the
// clock moving), if nothing waits for the clock any more, or if the
// threads take longer than Limit of real time to be still.
func (c *Clock) Drive(what string, done func() bool, max time.Duration) {
	c.t.Helper()
	start := c.Now()
	deadline := time.Now().Add(c.Limit)
	for {
		q := atomic.LoadUint32(c.u32(offQuiet))
		if done() {
			return
		}
		if still, waiting := c.still(); still {
			if done() { // it came to hold between the two looks (Settle's own)
				return
			}
			if c.Now()-start >= max {
				c.t.Fatalf("waiting for %s: not after %v of virtual time; %s", what, c.Now()-start, c.State())
			}
			if waiting == 0 && !done() {
				c.t.Fatalf("waiting for %s: every thread on the clock is parked and none waits for the clock; %s", what, c.State())
			}
			c.step()
			deadline = time.Now().Add(c.Limit)
			continue
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %s: the threads on the clock were not still after %v of real time; %s", what, c.Limit, c.State())
		}
		futex(c.u32(offQuiet), 0 /* FUTEX_WAIT */, q, 50*time.Millisecond)
	}
}

// A Call is a command sent to a driver process on the clock, until its
// answer has been read.
type Call struct {
	c     *Clock
	pid   int
	cmd   string
	start time.Duration
	line  string
	err   error
	got   atomic.Bool
}

// Send sends cmd to the main thread of the driver process pid (to w, its
// stdin) and reads its answer (from r, its stdout) as it comes; the process
// counts as running until Wait has it. The clock does not move meanwhile
// unless Wait or another Call's Wait drives it.
func (c *Clock) Send(pid int, w io.Writer, r *bufio.Reader, cmd string) *Call {
	c.t.Helper()
	a := &Call{c: c, pid: pid, cmd: cmd, start: c.Now()}
	c.Wake(pid)
	if _, err := fmt.Fprintln(w, cmd); err != nil {
		a.err = err
		a.got.Store(true)
		return a
	}
	go func() {
		a.line, a.err = r.ReadString('\n')
		a.got.Store(true)
		c.Poke()
	}()
	return a
}

// Wait drives the clock until the answer comes: the line, without its
// newline, and the virtual time since Send. It fails the test if the
// answer takes more than max of virtual time.
func (a *Call) Wait(max time.Duration) (string, time.Duration, error) {
	a.c.t.Helper()
	a.c.Drive(fmt.Sprintf("the answer to %q", a.cmd), a.got.Load, max)
	if a.err != nil {
		return "", 0, a.err
	}
	a.c.Park(a.pid)
	return strings.TrimSuffix(a.line, "\n"), a.c.Now() - a.start, nil
}

// Ask is Send, then Wait.
func (c *Clock) Ask(pid int, w io.Writer, r *bufio.Reader, cmd string, max time.Duration) (string, time.Duration, error) {
	c.t.Helper()
	return c.Send(pid, w, r, cmd).Wait(max)
}

func futex(addr *uint32, op int, val uint32, timeout time.Duration) {
	var ts *syscall.Timespec
	if timeout > 0 {
		t := syscall.NsecToTimespec(int64(timeout))
		ts = &t
	}
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}
