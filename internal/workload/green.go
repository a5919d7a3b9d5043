// Green contexts for the benchmarks: a device's SMs split into the
// driver's smallest groups, the groups divided in two by share, and a
// victim run in one green context beside a competitor in the other.

package workload

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/carve-gpu/carve/internal/cuda"
)

// GreenGroups splits device ordinal's SMs into the driver's smallest
// groups: every group has the same count; rest holds what is left (which
// may be empty).
func GreenGroups(ordinal int) (groups []cuda.SMResource, rest cuda.SMResource, err error) {
	dev, _, err := cuda.OpenPrimary(ordinal)
	if err != nil {
		return nil, rest, err
	}
	all, err := dev.SMs()
	if err != nil {
		return nil, rest, err
	}
	return cuda.SplitSMs(all, max(1, all.MinPartition()))
}

// GreenShares divides groups (and rest) in two: a, the k groups whose SMs
// come nearest to share of all SMs (at least one, leaving at least one),
// and b, the others with rest.
func GreenShares(groups []cuda.SMResource, rest cuda.SMResource, share float64) (a, b []cuda.SMResource) {
	total := rest.SMCount()
	for i := range groups {
		total += groups[i].SMCount()
	}
	k := int(math.Round(share * float64(total) / float64(groups[0].SMCount())))
	k = min(max(k, 1), len(groups)-1)
	a, b = groups[:k], append([]cuda.SMResource(nil), groups[k:]...)
	if rest.SMCount() > 0 {
		b = append(b, rest)
	}
	return a, b
}

// SMsOf is the number of SMs in res.
func SMsOf(res []cuda.SMResource) int {
	n := 0
	for i := range res {
		n += res[i].SMCount()
	}
	return n
}

// GreenPair runs victim in a green context over a, on a thread of its own,
// while the competitor named comp ("" for none; see NewWorkload) iterates
// without pause in a green context over b on another thread.
func GreenPair(ordinal int, a, b []cuda.SMResource, comp string, victim func(*Session) error) error {
	var stop atomic.Bool
	compDone := make(chan error, 1)
	if comp != "" {
		ready := make(chan error, 1)
		go func() {
			compDone <- OnThread(func() error {
				s, gc, err := OpenGreen(ordinal, "bench", b...)
				if err != nil {
					ready <- err
					return err
				}
				defer gc.Destroy()
				w, err := NewWorkload(s, comp)
				if err == nil {
					_, err = w.Iterate()
				}
				ready <- err
				for err == nil && !stop.Load() {
					_, err = w.Iterate()
				}
				return err
			})
		}()
		if err := <-ready; err != nil {
			return fmt.Errorf("%s competitor in a green context: %w", comp, err)
		}
	} else {
		compDone <- nil
	}
	err := OnThread(func() error {
		s, gc, err := OpenGreen(ordinal, "bench", a...)
		if err != nil {
			return err
		}
		defer gc.Destroy()
		return victim(s)
	})
	stop.Store(true)
	if cerr := <-compDone; err == nil && cerr != nil {
		err = fmt.Errorf("%s competitor in a green context: %w", comp, cerr)
	}
	return err
}
