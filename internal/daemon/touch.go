// MPS touches for the processes of claims (toucher): carve mps touch
// started for each, as carve run starts it for its tenant.

package daemon

import (
	"log/slog"
	"os"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
)

// toucher starts 'carve mps touch --after BLOCK' once for each process of
// a claim under carve's MPS, so that no such process stays MPS's newest
// client (README, "MPS, and what it brings with it"). A claim's processes
// start in their containers, where no carve run starts one for them.
type toucher struct {
	start func(block string) error // mps.StartTouch with carve's path and the MPS's client environment
	uid   int                      // whose processes it touches: MPS serves one user's clients at a time
	log   *slog.Logger
	seen  map[string]time.Time // the blocks touched, by path, with their creation
	other map[string]bool      // the claims whose processes run as another user, said once
}

func newToucher(start func(string) error, log *slog.Logger) *toucher {
	return &toucher{start: start, uid: os.Geteuid(), log: log, seen: map[string]time.Time{}, other: map[string]bool{}}
}

// pass starts a touch for each process of the claims under MPS that it has
// not seen (a block of the same path made anew is another process), and
// forgets the blocks that are gone. A process of another user than this
// one's is not touched: MPS would hold this user's client until that
// user's server ends.
func (t *toucher) pass(claims []ctl.Claim) {
	seen, other := map[string]time.Time{}, map[string]bool{}
	for _, c := range claims {
		if c.Root.Flags&ctl.FlagMPS == 0 {
			continue
		}
		other[c.UID] = t.other[c.UID] // said while the claim lasts
		for _, p := range c.Procs {
			seen[p.Path] = p.Created
			if at, ok := t.seen[p.Path]; ok && at.Equal(p.Created) {
				continue
			}
			uid := ctl.OwnerOf(p.Path)
			switch {
			case uid < 0: // gone meanwhile
			case uid != t.uid:
				if !other[c.UID] {
					t.log.Info("MPS touch: not made for a claim whose processes run as another user", "claim", c.Name(), "uid", uid)
				}
				other[c.UID] = true
			default:
				if err := t.start(p.Path); err != nil {
					t.log.Warn("MPS touch", "claim", c.Name(), "block", p.Path, "err", err)
				}
			}
		}
	}
	t.seen, t.other = seen, other
}
