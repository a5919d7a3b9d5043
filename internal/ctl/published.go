// Claims published in the node directory: carve-dra's copy of each claim's
// record there (Publish), root's, which every user's placement, listing
// and memory sums read as a claim that holds its TPCs and memory
// (published), so that claims and users' tenants are placed apart.

package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// PublishedDir is the directory, in the node directory, of the claims that
// carve-dra prepared on the node: root's, mode 0755, which carve node init
// makes and carve-dra makes where it is missing. Each file in it, named by
// a claim's UID, is a copy of carve-dra's record of the claim
// (ClaimRecords: its name, class, flags, partition on each of its GPUs,
// floor and memory limit), root's, mode 0644, mounted into no pod. Only
// root writes it: a user can neither make nor change one, and carve
// honours only a regular file of root's in a directory of root's that no
// one else may write; anything else is skipped and reported (Bad).
const PublishedDir = "dra-claims"

// NodeView is the node directory, if it exists and is trusted (as Dir
// checks it); ok is false where there is none, and err says why one that
// exists is not trusted.
func NodeView() (dir string, ok bool, err error) { return nodeDir() }

// Publish brings the node directory nodeDir's PublishedDir up to date with
// the claim records of carve-dra's runtime directory dir: each claim
// recorded there is copied in (written anew, under a temporary name
// renamed into place), and each file of a claim not recorded is removed.
// It makes the directory, root's, mode 0755, where it is missing, and
// replaces one that is not (a user made it before carve node init did).
// Call it as root, under both directories' placement locks.
func Publish(dir, nodeDir string) error {
	pd, err := publishedDir(nodeDir)
	if err != nil {
		return err
	}
	recs, _, _, legacy, err := records(dir)
	if err != nil {
		return err
	}
	if legacy {
		recs = nil
	}
	var errs []error
	for uid := range recs {
		tmp := filepath.Join(pd, "."+uid+".new")
		os.Remove(tmp)
		err := copyBlock(claimRecord(dir, uid), tmp, 0o644)
		if err == nil {
			err = os.Rename(tmp, filepath.Join(pd, uid))
		}
		if err != nil {
			os.Remove(tmp)
			errs = append(errs, fmt.Errorf("publishing claim %s in %s: %w", uid, pd, err))
		}
	}
	des, err := os.ReadDir(pd)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("published claims: %w", err))...)
	}
	for _, de := range des {
		if _, ok := recs[de.Name()]; !ok {
			os.RemoveAll(filepath.Join(pd, de.Name()))
		}
	}
	return errors.Join(errs...)
}

// publishedDir makes nodeDir's PublishedDir, root's, mode 0755, if there
// is none, and replaces one that is not so (rootDir).
func publishedDir(nodeDir string) (string, error) {
	return rootDir(filepath.Join(nodeDir, PublishedDir), "published claims")
}

// rootDir makes the directory path (what: what it holds, for errors) in
// the node directory, root's, mode 0755, if there is none, and replaces
// one that is not so (trustRootDir): a user's, made before root made it.
func rootDir(path, what string) (string, error) {
	for try := 0; ; try++ {
		st, err := os.Lstat(path)
		if err == nil && trustRootDir(what, path, nodeDirStat(st)) == nil {
			return path, nil
		}
		if try == 2 {
			return "", fmt.Errorf("%s: %s is not a directory of root's that only root writes", what, path)
		}
		if err == nil {
			os.RemoveAll(path) // a user's, made before root made it
		}
		err = os.Mkdir(path, 0o755)
		switch {
		case err == nil:
			// past the umask: by its path, which (root's, in a directory
			// with the sticky bit) no user can replace with a link
			os.Chmod(path, 0o755)
		case !errors.Is(err, os.ErrExist): // else made meanwhile: checked again
			return "", fmt.Errorf("%s: %w", what, err)
		}
	}
}

// trustPublished says whether PublishedDir, at path, as st describes it,
// is root's to write alone (trustRootDir).
func trustPublished(path string, st NodeDirStat) error {
	return trustRootDir("published claims", path, st)
}

// trustRootDir says whether the directory path of the node directory
// (what: what it holds), as st describes it, is root's to write alone: a
// directory (no link) of uid 0 that neither its group nor others may
// write.
func trustRootDir(what, path string, st NodeDirStat) error {
	switch {
	case st.Mode&os.ModeSymlink != 0:
		return fmt.Errorf("%s %s is a symbolic link", what, path)
	case !st.Mode.IsDir():
		return fmt.Errorf("%s %s is not a directory (%s)", what, path, st.Mode.Type())
	case st.UID != 0:
		return fmt.Errorf("%s %s is owned by %s, not root", what, path, UserName(st.UID))
	case st.Mode.Perm()&0o022 != 0:
		return fmt.Errorf("%s %s has mode %s: others may write it", what, path, modeString(st.Mode))
	}
	return nil
}

// listRootDir lists the directory path, which root alone writes (what:
// what it holds; trustRootDir): nothing where there is none, an error
// where it is not trusted or cannot be read.
func listRootDir(what, path string) ([]os.DirEntry, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		err = trustRootDir(what, path, nodeDirStat(st))
	}
	if err != nil {
		return nil, err
	}
	return os.ReadDir(path)
}

// published reads the claims published in dir (PublishedDir), by UID,
// except those in have (dir's own claims), each its record alone
// (Claim.Published). A directory or a file carve does not trust (not
// root's, a link, others may write it) or cannot read is skipped and
// reported in skipped.
func published(dir string, have map[string]bool) (claims []Claim, skipped []Bad) {
	pd := filepath.Join(dir, PublishedDir)
	des, err := listRootDir("published claims", pd)
	if err != nil {
		return nil, []Bad{{Path: pd, Reason: "published", Why: err.Error() + ": its claims are not honoured", err: err}}
	}
	for _, de := range des {
		uid := de.Name()
		if _, err := ClaimDir(dir, uid); err != nil || have[uid] {
			continue // a file being written (.UID.new), or dir's own claim
		}
		path := filepath.Join(pd, uid)
		c := Claim{UID: uid, Published: true}
		err := readPublished(path, &c.Root)
		if b, ok := badOf(path, err); ok {
			skipped = append(skipped, b)
			continue
		}
		if err == nil {
			claims = append(claims, c)
		}
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].UID < claims[j].UID })
	return claims, skipped
}

// readPublished reads a published claim at path into s: a regular file
// (no link) of root's that reads as a claim's record.
func readPublished(path string, s *Snapshot) error {
	h, err := openPath(path)
	if err != nil {
		return err
	}
	defer h.Close()
	st, err := h.f.Stat()
	if err != nil {
		return openError(path, err)
	}
	if uid := nodeDirStat(st).UID; uid != 0 {
		return &Bad{Path: path, Reason: "owner", Why: fmt.Sprintf("published claim %s is owned by %s, not root: not honoured", path, UserName(uid))}
	}
	if err := guarded(path, func() { *s = h.Snapshot() }); err != nil {
		return err
	}
	return checkMasks(path, *s)
}
