// How a GPU's level becomes its BE tenants' dials (dials), and how a
// restarted controller reads the level back from them (current).

package slo

import (
	"math"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// current is the level of a GPU's BE tenants, as a restarted controller
// reads it back: the lowest share of those steered outside claims, else
// the highest of the steered claims' (a claim's pod may write its block:
// it cannot pull the others down), else the lowest asked outside claims,
// else 1.
func current(be []tenant) float64 {
	steered, claimed, asked := math.Inf(1), math.Inf(-1), math.Inf(1)
	for _, t := range be {
		switch {
		case t.key.Claim != "":
			if t.Steered != nil {
				claimed = math.Max(claimed, t.Tide.Share)
			}
		case t.Steered != nil:
			steered = math.Min(steered, t.Tide.Share)
		default:
			asked = math.Min(asked, t.Tide.Share)
		}
	}
	switch {
	case !math.IsInf(steered, 1):
		return steered
	case !math.IsInf(claimed, -1):
		return claimed
	case !math.IsInf(asked, 1):
		return asked
	}
	return 1
}

// dials are a BE tenant's share and queue at level: the share the level,
// the queue from QueueMin (or what it asked, if less) at level 0 to what
// it asked at level 1 (QueueOpen below 1 where it asked no bound), in
// whole microseconds and parts per million, as the block holds them.
func dials(level float64, e ctl.Entry) (float64, time.Duration) {
	asked := e.Tide.Queue
	if e.Steered != nil {
		asked = e.Steered.Queue
	}
	share := math.Round(level*1e6) / 1e6
	if level >= 1 {
		return share, asked
	}
	top := asked
	if top == 0 {
		top = QueueOpen
	}
	lo := min(QueueMin, top)
	return share, (lo + time.Duration(level*float64(top-lo))).Truncate(time.Microsecond)
}
