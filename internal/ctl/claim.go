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
	"strconv"
	"syscall"

	"github.com/carve-gpu/carve/internal/topo"
)

// A claim is a partition reserved for a Kubernetes ResourceClaim (carve's
// DRA driver). carve's record of its reservation is ClaimRecords/UID, which
// no pod sees; what its pod sees of carve's runtime directory is its
// directory, claims/UID/ (mode 0777 with the sticky bit, mounted into its
// containers read-write):
//
//	root     a copy of the reservation that the claim's processes read
//	         and write: a control block for no process (pid 0) with the
//	         claim's mask on each of its GPUs, class and tide policy, and the
//	         claim's memory account, mode 0666, which every process of the
//	         claim counts its device memory in, whatever its uid. carve reads
//	         only the account of it (Claim.Account), never its policy.
//	node-*   a hard link to each of its GPUs' node blocks (LS and BE
//	         claims; root's, mode 0644, which carve alone writes), the mount
//	         point of the GPU's directory of LS files (node-*.d, mounted
//	         read-only by carve-dra's CDI spec), and its LS file (node-*.ls-0,
//	         an LS claim's, mode 0666) or its own BE file (node-*.be, a BE
//	         claim's, mode 0666)
//	N        the blocks of the claim's processes, named by their pids in
//	         their containers' namespace, each copied from root by the shim
//
// A reservation writes the directory, then the record; a directory
// without a record is an interrupted reservation (or release), which the
// next placement removes, unless a process runs in it (an older carve's
// claim whose root could not be recorded: kept, and reported). Pids in
// the directory mean nothing outside the containers, so a process counts
// as running while its shim holds the lock on its block (Held).
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
	UID string
	Dir string
	// Root is the reservation as carve recorded it (ClaimRecords): its
	// masks, class, policy and memory limit.
	Root Snapshot
	// Account is the memory its processes count in its root, as they
	// wrote it: theirs to write, and so only listed.
	Account Memory
	Procs   []Entry
	// Published: a claim of carve-dra's published in the node directory
	// (PublishedDir): its record alone, with no directory, no processes
	// and no account here.
	Published bool
}

// Name is the claim's namespace/name, as its reservation recorded it.
func (c Claim) Name() string {
	if len(c.Root.Command) == 2 {
		return c.Root.Command[1]
	}
	return c.UID
}

// rootPerm is the mode of a claim's root: every process of the claim,
// whatever its uid, counts its memory in it.
const rootPerm os.FileMode = 0o666

// CreateClaimRoot writes the claim's root in claimDir (see Claim): under
// a temporary name, then renamed into place, of mode rootPerm (0666).
func CreateClaimRoot(claimDir string, in Init) (*Handle, error) {
	in.PID, in.Tenant = 0, 0
	return create(filepath.Join(claimDir, ClaimRoot), filepath.Join(claimDir, ".root.new"), rootPerm, in)
}

// Claims returns the claims reserved in dir, by UID, with their running
// processes (the blocks of ended ones are removed, as List does), and the
// directories of interrupted reservations (no record). It skips the
// claims whose record it cannot read and the blocks of processes it
// cannot read, and reports a root it cannot read (Read says which); a
// claim whose root its pod spoiled stays reserved as recorded. In the node
// directory it also returns the claims carve-dra published there
// (Claim.Published).
func Claims(dir string) (claims []Claim, pending []string, err error) {
	claims, pending, _, err = claimList(dir, false)
	return claims, pending, err
}

// claimList is Claims, with the blocks it skipped; peek: it removes
// nothing and credits nothing back (Peek).
func claimList(dir string, peek bool) (claims []Claim, pending []string, skipped []Bad, err error) {
	recs, badRec, skipped, legacy, err := records(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	des, err := os.ReadDir(filepath.Join(dir, ClaimsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("listing claims: %w", err)
	}
	seen := map[string]bool{}
	for _, de := range des {
		cd, err := ClaimDir(dir, de.Name())
		if err != nil || !de.IsDir() || badRec[de.Name()] {
			continue
		}
		c := Claim{UID: de.Name(), Dir: cd}
		path := filepath.Join(cd, ClaimRoot)
		if legacy { // an older carve's: the root is the reservation
			err := readRoot(path, &c.Root)
			if errors.Is(err, os.ErrNotExist) {
				pending, skipped = unrecorded(cd, pending, skipped)
				continue
			}
			if b, ok := badOf(path, err); ok {
				skipped = append(skipped, b)
				continue
			}
			c.Account = c.Root.Memory
		} else {
			rec, ok := recs[c.UID]
			c.Root = rec
			if c.Account, err = readAccount(path); err != nil {
				b, _ := badOf(path, err)
				skipped = append(skipped, b) // reported; a claim stays as recorded
			}
			if !ok {
				pending, skipped = unrecorded(cd, pending, skipped)
				continue
			}
		}
		seen[c.UID] = true
		var bad []Bad
		if c.Procs, _, bad, err = scan(cd, true, peek); err != nil {
			skipped = append(skipped, Bad{Path: cd, Reason: "open", Why: err.Error(), err: err})
			if legacy {
				continue
			}
		}
		skipped = append(skipped, bad...)
		claims = append(claims, c)
	}
	for uid, rec := range recs { // a record whose directory is gone holds its TPCs until released
		if !seen[uid] {
			cd, _ := ClaimDir(dir, uid)
			claims = append(claims, Claim{UID: uid, Dir: cd, Root: rec})
		}
	}
	claims, bad := overlapping(claims)
	skipped = append(skipped, bad...)
	have := map[string]bool{}
	for _, c := range claims {
		have[c.UID] = true
	}
	pub, bad := published(dir, have)
	claims, skipped = append(claims, pub...), append(skipped, bad...)
	sort.Slice(claims, func(i, j int) bool { return claims[i].UID < claims[j].UID })
	return claims, pending, skipped, nil
}

// unrecorded adds the directory cd of a claim without a reservation to
// pending, an interrupted reservation that the next placement removes,
// unless a process runs in it (a shim holds the lock on its block): then
// it is a claim whose pod runs, one of an older carve's whose root could
// not be read when its claims were recorded (RecordLegacy), and it is
// kept and reported in skipped, its TPCs unknown, never removed under its
// processes.
func unrecorded(cd string, pending []string, skipped []Bad) ([]string, []Bad) {
	if pid, ok := running(cd); ok {
		return pending, append(skipped, Bad{Path: cd, Reason: "unrecorded",
			Why: fmt.Sprintf("claim directory %s has no record of carve's, yet its process %s runs (its root unreadable when an older carve's claims were recorded?): "+
				"kept, its TPCs unknown to placement, until its claim is released", cd, pid)})
	}
	return append(pending, cd), skipped
}

// running says whether a process holds the lock on one of the blocks in
// the claim's directory cd, as a shim does on its own for its life
// (Held), and names the first such block.
func running(cd string) (string, bool) {
	des, _ := os.ReadDir(cd)
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil || !de.Type().IsRegular() {
			continue
		}
		f, err := os.OpenFile(filepath.Join(cd, de.Name()), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		held := held(f)
		f.Close()
		if held {
			return de.Name(), true
		}
	}
	return "", false
}

// readAccount reads the memory account of a claim's root at path: all
// carve reads of it. A root that is gone holds no memory.
func readAccount(path string) (Memory, error) {
	h, err := openPath(path)
	if errors.Is(err, os.ErrNotExist) {
		return Memory{}, nil
	}
	if err != nil {
		return Memory{}, err
	}
	defer h.Close()
	var m Memory
	err = guarded(path, func() { m = h.Snapshot().Memory })
	return m, err
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
