// Session: carve's kernel modules loaded in a context (primary or green)
// with a stream and timing events, and kernels launched and timed there,
// under a TPC mask through carve's own launch hook.

package workload

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/hook"
	"github.com/carve-gpu/carve/internal/kernels"
	"github.com/carve-gpu/carve/internal/topo"
)

// Session holds one of carve's kernel modules loaded in a context, a stream,
// timing events and, once a run asks for a mask, carve's own launch hook.
// Its methods must run on the OS thread that opened it, with its context
// current (CUDA's current context is per thread).
type Session struct {
	ctx    *cuda.Context
	mods   []cuda.Module
	later  []string // modules loaded when a kernel is not found in mods
	stream cuda.Stream
	hook   *hook.Hook
	start  cuda.Event
	end    cuda.Event
}

// Open loads the benchmark kernels in device ordinal's primary context.
func Open(ordinal int) (*Session, error) {
	_, ctx, err := cuda.OpenPrimary(ordinal)
	if err != nil {
		return nil, err
	}
	s, err := OpenIn(ctx, "bench")
	if err != nil {
		return nil, err
	}
	s.later = []string{"predict"} // only the prediction suite's workers need it
	return s, nil
}

// OpenIn makes ctx current on the calling thread, which must be locked to
// it, and loads the kernel modules named (bench, predict, stamp) there.
func OpenIn(ctx *cuda.Context, names ...string) (*Session, error) {
	if err := ctx.MakeCurrent(); err != nil {
		return nil, err
	}
	s := &Session{ctx: ctx}
	for _, name := range names {
		if err := s.load(name); err != nil {
			return nil, err
		}
	}
	var err error
	if s.stream, err = cuda.NewStream(); err != nil {
		return nil, err
	}
	if s.start, err = cuda.NewEvent(); err != nil {
		return nil, err
	}
	s.end, err = cuda.NewEvent()
	return s, err
}

// OpenGreen creates a green context over res on device ordinal, makes it
// current on the calling thread (locked to it) and loads module name there.
func OpenGreen(ordinal int, name string, res ...cuda.SMResource) (*Session, *cuda.GreenContext, error) {
	dev, _, err := cuda.OpenPrimary(ordinal)
	if err != nil {
		return nil, nil, err
	}
	g, err := dev.NewGreenContext(res...)
	if err != nil {
		return nil, nil, err
	}
	s, err := OpenIn(&g.Context, name)
	return s, g, err
}

// load JIT-compiles the embedded module name into the session.
func (s *Session) load(name string) error {
	m, err := kernels.Load(name)
	if err != nil {
		return err
	}
	s.mods = append(s.mods, m)
	return nil
}

// function finds a kernel by name in the session's modules, loading the
// deferred ones one by one until it is found.
func (s *Session) function(name string) (cuda.Function, error) {
	if len(s.mods) == 0 {
		return 0, fmt.Errorf("kernel %s: the session has no kernel modules", name)
	}
	for i := 0; ; i++ {
		if i == len(s.mods) {
			if len(s.later) == 0 {
				return s.mods[len(s.mods)-1].Function(name) // its error names the kernel
			}
			if err := s.load(s.later[0]); err != nil {
				return 0, err
			}
			s.later = s.later[1:]
		}
		if f, err := s.mods[i].Function(name); err == nil {
			return f, nil
		}
	}
}

// MakeCurrent makes the session's context current on the calling thread.
func (s *Session) MakeCurrent() error { return s.ctx.MakeCurrent() }

// OnThread runs f on a goroutine locked to an OS thread of its own and
// waits for it: each green context in a process needs a thread.
func OnThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		done <- f()
	}()
	return <-done
}

// Run launches l on the session's stream under mask (nil: none), waits for
// it and returns its time in ms.
func (s *Session) Run(fn cuda.Function, l cuda.Launch, mask *topo.Disable) (float64, error) {
	return s.Timed(mask, func() error {
		l.Stream = s.stream
		return fn.Launch(l)
	})
}

// Timed enqueues work (launches on s.stream) between two events under mask
// (nil: none), waits, and returns the time between the events in ms.
//
// carve's hook is installed on the first masked run only: a process that
// runs under libcarve.so (a benchmark worker started with carve run) has the
// driver's one launch-callback subscription taken already, and needs none.
func (s *Session) Timed(mask *topo.Disable, work func() error) (float64, error) {
	if mask != nil {
		if s.hook == nil {
			h, err := hook.Install()
			if err != nil {
				return 0, err
			}
			s.hook = h
		}
		m := *mask
		s.hook.SetMask(&m)
		defer s.hook.SetMask(nil)
	}
	if err := s.start.Record(s.stream); err != nil {
		return 0, err
	}
	if err := work(); err != nil {
		return 0, err
	}
	if mask != nil {
		if v := s.hook.Unsupported(); v != 0 {
			return 0, fmt.Errorf("launch descriptor version %#x is not supported", v)
		}
	}
	if err := s.end.Record(s.stream); err != nil {
		return 0, err
	}
	if err := s.end.Synchronize(); err != nil {
		return 0, err
	}
	return s.end.Since(s.start)
}

// launch enqueues fn on the session's stream with the given grid, block
// and argument pointers.
func (s *Session) launch(fn cuda.Function, grid, block [3]uint32, args ...unsafe.Pointer) error {
	return fn.Launch(cuda.Launch{Grid: grid, Block: block, Stream: s.stream, Args: args})
}
