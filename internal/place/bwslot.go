// Bandwidth slots: a tenant with a memory bandwidth share (ctl.Policy.BW)
// gets, on each of its GPUs, a slot of each epoch (ctl.BWEpoch) that its
// launches keep to (shim/bw.c), apart from the slots of the GPU's other
// tenants with a share: packed in order of placement from the epoch's
// start, into the first hole long enough (a tenant that ended leaves one).

package place

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// bwSlot is a slot taken on the GPU: its start in the epoch and length.
type bwSlot struct {
	off, len time.Duration
	share    float64
	strict   bool
	holder   string
}

// chooseBWSlot chooses where a slot of share (strict or not) starts in the
// epoch on a GPU whose holders hold taken: the first hole of the epoch long
// enough (a slot a block says that is none of the epoch, ignored). The shares of a GPU's tenants add up to 1 at most, so that each
// has its slot whoever else wants theirs: an error says which hold the rest.
func chooseBWSlot(share float64, strict bool, taken []bwSlot) (time.Duration, error) {
	epoch, n := ctl.BWEpoch, ctl.BWSlot(share, ctl.BWEpoch)
	taken = slices.DeleteFunc(slices.Clone(taken), func(s bwSlot) bool { // a block's that is no slot of the epoch
		return s.off < 0 || s.len <= 0 || s.off > epoch || s.len > epoch-s.off || !(s.share > 0 && s.share <= 1)
	})
	slices.SortFunc(taken, func(a, b bwSlot) int { return cmp.Compare(a.off, b.off) })
	sum, strictSum := share, 0.0
	if strict {
		strictSum = share
	}
	var who []string
	for _, s := range taken {
		sum += s.share
		if s.strict {
			strictSum += s.share
		}
		kind := ""
		if s.strict {
			kind = " strict"
		}
		who = append(who, fmt.Sprintf("%s (%g%s)", s.holder, s.share, kind))
	}
	const slack = 1e-9
	if strictSum > 1+slack {
		return 0, fmt.Errorf("strict bandwidth shares on the GPU would add up to %g, over 1: %s hold %g",
			strictSum, strings.Join(who, ", "), strictSum-share)
	}
	if sum > 1+slack {
		return 0, fmt.Errorf("bandwidth shares on the GPU would add up to %g, over 1 (each is a slot of the epoch that no other takes): %s hold %g",
			sum, strings.Join(who, ", "), sum-share)
	}
	at := time.Duration(0)
	for _, s := range taken {
		if s.off-at >= n {
			return at, nil
		}
		at = max(at, s.off+s.len)
	}
	if epoch-at >= n {
		return at, nil
	}
	return 0, fmt.Errorf("no hole of %v in the GPU's bandwidth epoch of %v: the slots of %s leave none (they add up to %g, but apart)",
		n, epoch, strings.Join(who, ", "), sum-share)
}
