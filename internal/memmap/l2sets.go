// An L2 set's lines found by eviction (after SGDRC's Algorithm 2), and how
// many of them are needed for the rest to evict the target.

package memmap

import (
	"errors"
	"fmt"
)

// Evicted says whether loading the lines of [from, end) and then the
// lines at extra, after the target, evicted the target from the L2 (a
// vote over noisy tries on the GPU).
type Evicted func(from, end uint64, extra []uint64) (bool, error)

// EvictionSet finds lines of the target's L2 set, after SGDRC's Algorithm
// 2: the shortest sweep [from, end) that evicts the target ends just past
// a line of its set. That line is kept and loaded after every later sweep,
// and the search repeats below it, until the kept lines alone evict the
// target (or max are kept). With an LRU-like set of W ways, W lines are
// kept. Offsets are in bytes, line apart.
func EvictionSet(evicted Evicted, from, end, line uint64, max int) ([]uint64, error) {
	if end <= from || line == 0 {
		return nil, errors.New("empty sweep")
	}
	ok, err := evicted(from, end, nil)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("a sweep of %d MiB does not evict the target", (end-from)>>20)
	}
	var mates []uint64
	for len(mates) < max {
		if ok, err := evicted(from, from, mates); err != nil || ok {
			return mates, err
		}
		// [from, lo) does not evict with the mates, [from, hi) does
		lo, hi := from, end
		for hi-lo > line {
			mid := lo + (hi-lo)/2/line*line
			ok, err := evicted(from, mid, mates)
			if err != nil {
				return mates, err
			}
			if ok {
				hi = mid
			} else {
				lo = mid
			}
		}
		mates = append(mates, lo)
		end = lo
	}
	return mates, nil
}

// Essential counts the lines of an eviction set without which the rest
// no longer evicts the target: all of them in a set of as many ways as
// there are lines.
func Essential(evicted Evicted, from uint64, mates []uint64) (int, error) {
	n := 0
	for i := range mates {
		rest := append(append([]uint64(nil), mates[:i]...), mates[i+1:]...)
		ok, err := evicted(from, from, rest)
		if err != nil {
			return n, err
		}
		if !ok {
			n++
		}
	}
	return n, nil
}
