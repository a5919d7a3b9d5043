// The runtime directory's claims: the directory of a partition reserved
// for a Kubernetes ResourceClaim, its reservation (root) and listing
// them with their processes.

package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/carve-gpu/carve/internal/topo"
)

// A claim is a partition reserved for a Kubernetes ResourceClaim (carve's
// DRA driver), kept in the runtime directory as claims/UID/:
//
//	root     the reservation: a control block for no process (pid 0) with
//	         the claim's mask on each of its GPUs, class and tide policy. It is written last, so
//	         a directory without it is an interrupted reservation, and while
//	         it exists it is the claim's checkpoint.
//	node-*   a hard link to each of its GPUs' node blocks (LS and BE claims)
//	N        the blocks of the claim's processes, named by their pids in
//	         their containers' namespace, each copied from root by the shim
//
// The directory is what the claim's containers see of carve's runtime
// directory. Pids in it mean nothing outside the containers, so a process
// counts as running while its shim holds the lock on its block (Held).
const (
	ClaimsDir = "claims"
	ClaimRoot = "root"
)

var claimUID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`)

// ClaimDir is the directory of claim uid in the runtime directory dir.
func ClaimDir(dir, uid string) (string, error) {
	if !claimUID.MatchString(uid) {
		return "", fmt.Errorf("claim UID %q: want letters, digits and dashes", uid)
	}
	return filepath.Join(dir, ClaimsDir, uid), nil
}

// Claim is a reserved claim and the processes running in it.
type Claim struct {
	UID   string
	Dir   string
	Root  Snapshot
	Procs []Entry
}

// Name is the claim's namespace/name, as its reservation recorded it.
func (c Claim) Name() string {
	if len(c.Root.Command) == 2 {
		return c.Root.Command[1]
	}
	return c.UID
}

// CreateClaimRoot writes the reservation of the claim in claimDir (see
// Claim): under a temporary name, then renamed into place.
func CreateClaimRoot(claimDir string, in Init) (*Handle, error) {
	in.PID, in.Tenant = 0, 0
	return create(filepath.Join(claimDir, ClaimRoot), filepath.Join(claimDir, ".root.new"), 0o644, in)
}

// Claims returns the claims reserved in dir, by UID, with their running
// processes (the blocks of ended ones are removed, as List does), and the
// directories of interrupted reservations (no root). It skips the claims
// whose root it cannot read, and the blocks of processes it cannot read
// (Read says which).
func Claims(dir string) (claims []Claim, pending []string, err error) {
	claims, pending, _, err = claimList(dir)
	return claims, pending, err
}

func claimList(dir string) (claims []Claim, pending []string, skipped []Bad, err error) {
	des, err := os.ReadDir(filepath.Join(dir, ClaimsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing claims: %w", err)
	}
	for _, de := range des {
		cd, err := ClaimDir(dir, de.Name())
		if err != nil || !de.IsDir() {
			continue
		}
		c := Claim{UID: de.Name(), Dir: cd}
		path := filepath.Join(cd, ClaimRoot)
		err = readRoot(path, &c.Root)
		if errors.Is(err, os.ErrNotExist) {
			pending = append(pending, cd)
			continue
		}
		if b, ok := badOf(path, err); ok {
			skipped = append(skipped, b)
			continue
		}
		var bad []Bad
		if c.Procs, _, bad, err = scan(cd, true); err != nil {
			skipped = append(skipped, Bad{Path: cd, Reason: "open", Why: err.Error(), err: err})
			continue
		}
		skipped = append(skipped, bad...)
		claims = append(claims, c)
	}
	claims, bad := overlapping(claims)
	skipped = append(skipped, bad...)
	sort.Slice(claims, func(i, j int) bool { return claims[i].UID < claims[j].UID })
	return claims, pending, skipped, nil
}

// readRoot reads a claim's root block into s.
func readRoot(path string, s *Snapshot) error {
	h, err := openPath(path)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := guarded(path, func() { *s = h.Snapshot() }); err != nil {
		return err
	}
	return checkMasks(path, *s)
}

// overlapping skips the claims whose root holds every live TPC of a GPU
// on which another claim holds TPCs too: claims are reserved on free TPCs
// (a BE claim holds only its floor), so two never overlap, and one that
// holds a whole GPU beside another was rewritten, by its pod, whose
// directory it is in. A root rewritten otherwise is not told from one
// carve wrote.
func overlapping(claims []Claim) (kept []Claim, skipped []Bad) {
	type held struct {
		claim int
		gpu   string
		tpcs  topo.Enable
		whole bool
	}
	var all []held
	for i, c := range claims {
		for _, p := range c.Root.Parts() {
			tpcs := p.Mask.Enable().And(p.Live)
			if c.Root.Class == ClassBE {
				tpcs = p.Floor.And(p.Live)
			}
			if p.GPU != "" && p.Live != (topo.Enable{}) {
				all = append(all, held{i, p.GPU, tpcs, tpcs == p.Live})
			}
		}
	}
	bad := map[int]string{}
	for _, a := range all {
		for _, b := range all {
			if a.whole && b.claim != a.claim && a.gpu == b.gpu && b.tpcs.And(a.tpcs).Count() > 0 {
				bad[a.claim] = fmt.Sprintf("claim %s holds every TPC of GPU %s, where claim %s holds TPCs too (its root rewritten?)",
					claims[a.claim].UID, a.gpu, claims[b.claim].UID)
			}
		}
	}
	for i, c := range claims {
		if why, ok := bad[i]; ok {
			skipped = append(skipped, Bad{Path: filepath.Join(c.Dir, ClaimRoot), Reason: "overlap", Why: why})
		} else {
			kept = append(kept, c)
		}
	}
	return kept, skipped
}
