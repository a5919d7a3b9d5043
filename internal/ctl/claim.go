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
// directories of interrupted reservations (no root).
func Claims(dir string) (claims []Claim, pending []string, err error) {
	des, err := os.ReadDir(filepath.Join(dir, ClaimsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing claims: %w", err)
	}
	for _, de := range des {
		cd, err := ClaimDir(dir, de.Name())
		if err != nil || !de.IsDir() {
			continue
		}
		h, err := openPath(filepath.Join(cd, ClaimRoot))
		if errors.Is(err, os.ErrNotExist) {
			pending = append(pending, cd)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		c := Claim{UID: de.Name(), Dir: cd, Root: h.Snapshot()}
		h.Close()
		if c.Procs, _, err = scan(cd, true); err != nil {
			return nil, nil, err
		}
		claims = append(claims, c)
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].UID < claims[j].UID })
	return claims, pending, nil
}
