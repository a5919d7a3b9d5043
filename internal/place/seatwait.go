// Waiting for a seat: in the node directory a user's carve seats no LS
// tenant (ctl.WritesNodes), root's carve daemon does, and the tenant's
// shim looks for its seat once, when it starts; so a user's carve run
// waits for it (AwaitSeats) before it starts the program.

package place

import (
	"fmt"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// SeatWait is how long AwaitSeats waits for root's carve daemon, which
// looks over the node directory every daemon.CheckEvery.
const SeatWait = 3 * time.Second

// seatPoll is how often AwaitSeats looks.
const seatPoll = 10 * time.Millisecond

// Unseated are the partitions of s, an LS or BE tenant's block in dir,
// that its node block does not yet take part in tide: for an LS tenant,
// those whose node block has no seat of its tenant's pid; for a BE
// tenant, those with no node block. Of another tenant, none.
func Unseated(dir string, s ctl.Snapshot) []ctl.Part {
	if s.Class != ctl.ClassLS && s.Class != ctl.ClassBE {
		return nil
	}
	var out []ctl.Part
	for _, p := range s.Parts() {
		if p.Node == "" {
			continue
		}
		n, err := ctl.PeekNode(dir, p.Node)
		if err == nil {
			seated := s.Class == ctl.ClassBE || n.Seated(s.Tenant)
			n.Close()
			if seated {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// AwaitSeats waits until s (a block in dir) is Unseated nowhere, for up
// to SeatWait counted in the sleeps it takes (sleep: time.Sleep, or a
// test's clock), and returns where it is still not seated. carve run calls
// it where it writes no node block (ctl.WritesNodes).
func AwaitSeats(dir string, s ctl.Snapshot, sleep func(time.Duration)) []ctl.Part {
	for waited := time.Duration(0); ; waited += seatPoll {
		left := Unseated(dir, s)
		if len(left) == 0 || waited >= SeatWait {
			return left
		}
		sleep(seatPoll)
	}
}

// SeatWarning is what carve run says of the partitions AwaitSeats left
// unseated (parts, of a tenant of class): that it runs untided, and why
// that may be.
func SeatWarning(dir string, class uint32, parts []ctl.Part) string {
	var gpus []string
	for _, p := range parts {
		gpus = append(gpus, p.GPU)
	}
	what := "LS seat"
	if class == ctl.ClassBE {
		what = "node block"
	}
	return fmt.Sprintf("no %s on GPU %s within %v: is root's 'carve daemon' running on the node directory %s? running untided",
		what, strings.Join(gpus, ", "), SeatWait, dir)
}
