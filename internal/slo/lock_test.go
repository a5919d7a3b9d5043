// Tests of the controller's lock (lock.go): of two controllers on one
// runtime directory only the holder steers, the other takes over when the
// holder ends, and Run says once that it waits.

package slo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/slo"
)

// TestOneControllerSteers: a second controller on the plant's directory
// steps nothing while the first holds the lock (ErrOther, no view, the
// BE's dials as the first left them); when the first lets it go, the
// second takes over and steers.
func TestOneControllerSteers(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	be := p.addBE(1, 300*time.Microsecond)
	first := p.c
	if err := first.TryStep(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(p.dir, slo.LockFile)); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("lock file: %v, %v; want mode 0644", st, err)
	}
	second := slo.New(p.dir)
	second.Now = first.Now
	for range 30 {
		p.run(1)
		before := be.Snapshot().Tide
		if err := second.TryStep(); !errors.Is(err, slo.ErrOther) {
			t.Fatalf("second controller beside the first: %v, want ErrOther", err)
		}
		if _, ok := second.View(slo.Key{PID: l.pid}); ok {
			t.Fatal("the second controller stepped")
		}
		if now := be.Snapshot().Tide; now != before {
			t.Fatalf("the second controller wrote the BE: %+v, was %+v", now, before)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	p.c = second
	if err := second.TryStep(); err != nil {
		t.Fatalf("the first let go: %v", err)
	}
	if err := first.TryStep(); !errors.Is(err, slo.ErrOther) {
		t.Fatalf("the first, after the second took over: %v, want ErrOther", err)
	}
	p.run(60)
	converged(t, p, l, 5*time.Millisecond, 20, 0.1)
	if _, ok := second.View(slo.Key{PID: l.pid}); !ok {
		t.Error("the second controller has no view after taking over")
	}
}

// TestRunWaitsForTheLock: Run beside a controller that holds the lock
// reports ErrOther once, and steps once the holder lets it go.
func TestRunWaitsForTheLock(t *testing.T) {
	p := newPlant(t)
	l := p.addLS(ctl.SLO{Max: 5 * time.Millisecond}, 2*time.Millisecond, 4, 40)
	p.addBE(1, 300*time.Microsecond)
	if err := p.c.TryStep(); err != nil {
		t.Fatal(err)
	}
	second := slo.New(p.dir)
	reports := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); second.Run(ctx, time.Millisecond, func(err error) { reports <- err }) }()
	if err := <-reports; !errors.Is(err, slo.ErrOther) {
		t.Fatalf("Run beside the holder: %v, want ErrOther", err)
	}
	p.c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := second.View(slo.Key{PID: l.pid}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not take over within 10 s of the holder letting go")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	close(reports)
	for err := range reports {
		t.Errorf("reported again: %v", err)
	}
	if err := p.c.TryStep(); err != nil {
		t.Errorf("Run ended: %v, want the lock free", err)
	}
}
