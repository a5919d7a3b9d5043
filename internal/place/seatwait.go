// Waiting for a seat: in the node directory a user's carve seats no LS
// tenant (ctl.WritesNodes), root's carve daemon does, and the tenant's
// shim looks for its seat once, when it starts; root's carve daemon also
// records each tenant's class and SLO (ctl.RecordTenants), which must be
// what carve made it, not what its program writes; so a user's carve run
// waits for both (AwaitSeats) before it starts the program.

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

// Unrecorded says whether e, the first block in dir of a tenant of carve
// run (of any class: one of none that wrote LS into its block before its
// record was taken would be believed LS), has no record of root's yet
// (ctl.RecordTenants), which carve believes its class and SLO from in the
// node directory: a record taken after its program started could be of
// what the program wrote. Where no records are kept, false.
func Unrecorded(dir string, e ctl.Entry) bool {
	recs, _ := ctl.ReadRecords(dir)
	return !recs.Recorded(e)
}

// AwaitSeats waits until e (a tenant's first block in dir) is recorded
// (Unrecorded) and Unseated nowhere, for up to SeatWait counted in the
// sleeps it takes (sleep: time.Sleep, or a test's clock), and returns
// where it is still not seated and whether it is recorded. carve run
// calls it where it writes no node block (ctl.WritesNodes), and fails
// where its tenant is not recorded and root's daemon does not run
// (Fresh), else warns (SeatWarning).
func AwaitSeats(dir string, e ctl.Entry, sleep func(time.Duration)) (left []ctl.Part, recorded bool) {
	for waited := time.Duration(0); ; waited += seatPoll {
		left, recorded = Unseated(dir, e.Snapshot), !Unrecorded(dir, e)
		if len(left) == 0 && recorded || waited >= SeatWait {
			return left, recorded
		}
		sleep(seatPoll)
	}
}

// SeatWarning is what carve run says of what AwaitSeats left undone for
// a tenant of class: its record (recorded: done), and the partitions left
// unseated (parts), where it runs untided; and why that may be. "" where
// nothing is left.
func SeatWarning(dir string, class uint32, parts []ctl.Part, recorded bool) string {
	var missing []string
	if !recorded {
		missing = append(missing, "record of its class")
	}
	if len(parts) > 0 {
		var gpus []string
		for _, p := range parts {
			gpus = append(gpus, p.GPU)
		}
		what := "LS seat"
		if class == ctl.ClassBE {
			what = "node block"
		}
		missing = append(missing, fmt.Sprintf("%s on GPU %s", what, strings.Join(gpus, ", ")))
	}
	if len(missing) == 0 {
		return ""
	}
	then := "running untided"
	if len(parts) == 0 {
		then = "running, not believed LS"
		if class != ctl.ClassLS {
			then = "running"
		}
	}
	return fmt.Sprintf("no %s within %v: is root's 'carve daemon' running on the node directory %s? %s",
		strings.Join(missing, ", no "), SeatWait, dir, then)
}

// Lost says why root's record of e, the first block in dir of a tenant
// carve run placed, leaves it less than its block says, where it does:
// another placement made at the same moment (past a lock held too long,
// lockOrPass, or beside a block made by hand) was recorded first with
// some of its TPCs, its memory or its bandwidth slots, which the other
// users now believe that one's. A placement with share (--share) is held
// to its bandwidth slots alone: the TPCs it shares and a limit past the
// GPU's memory are not recorded. nil where nothing is lost, or where e
// has no record (none is kept, or root has not recorded it yet) but for
// one placed past a held lock (passed), which runs only as root recorded
// it: another placement past the lock may have chosen its TPCs.
func Lost(dir string, e ctl.Entry, share, passed bool) error {
	recs, _ := ctl.ReadRecords(dir)
	if _, unfenced := recs.Unfenced(); unfenced || !recs.Recorded(e) {
		if passed {
			return fmt.Errorf("pid %d was placed in %s past a held placement lock, and root's carve daemon has not recorded it: "+
				"its program is not run, since another placement made past the lock may hold its TPCs; run it again", e.PID, dir)
		}
		return nil
	}
	lost := len(recs.Changed([]ctl.Entry{e})) > 0
	if share {
		got, placed := recs.Of(e), e.Parts()
		lost = got.BW != e.BW
		for i, p := range got.Parts() {
			lost = lost || i >= len(placed) || p.BWOff != placed[i].BWOff
		}
	}
	if !lost {
		return nil
	}
	return fmt.Errorf("root's record of pid %d in %s holds less than it was placed with (its TPCs, memory limit or bandwidth slot): "+
		"another placement made at the same moment was recorded first, so its program is not run: run it again", e.PID, dir)
}
