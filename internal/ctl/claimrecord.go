// carve's record of each claim's reservation, apart from its pods: a
// private directory beside the claims' (ClaimRecords), written when a claim
// is reserved, removed first when it is released, and recorded once from
// the claims' roots in a runtime directory of an older carve.

package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ClaimRecords is the directory, beside ClaimsDir in the runtime
// directory, of carve's record of each claim's reservation: a control
// block for no process, named by the claim's UID, mode 0600 in a directory
// of mode 0700, which no pod sees. What placement, prepare and carve
// daemon believe of a claim (its masks, class, floors, memory limit, MPS)
// is read from its record, never from its root, which its pod may write.
// A claim is reserved while its record exists: the record is written last
// of a reservation and removed first of a release.
const ClaimRecords = "claim-records"

// claimRecord is the path of claim uid's record in the runtime directory
// dir.
func claimRecord(dir, uid string) string { return filepath.Join(dir, ClaimRecords, uid) }

// privateDir makes dir's ClaimRecords if there is none, and refuses one
// that is not a directory (a link among them) or that others may enter.
func privateDir(dir string) (string, error) {
	rd := filepath.Join(dir, ClaimRecords)
	if err := os.Mkdir(rd, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("claim records: %w", err)
	}
	st, err := os.Lstat(rd)
	if err != nil {
		return "", fmt.Errorf("claim records: %w", err)
	}
	if !st.IsDir() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("claim records %s: want a directory of mode 0700, not %s", rd, st.Mode())
	}
	return rd, nil
}

// RecordClaim writes carve's record of claim uid's reservation, in, into
// the runtime directory dir (ClaimRecords). Call it under the placement
// lock, last of a reservation.
func RecordClaim(dir, uid string, in Init) error {
	if _, err := ClaimDir(dir, uid); err != nil {
		return err
	}
	rd, err := privateDir(dir)
	if err != nil {
		return err
	}
	in.PID, in.Tenant = 0, 0
	h, err := create(filepath.Join(rd, uid), filepath.Join(rd, "."+uid+".new"), 0o600, in)
	if err != nil {
		return err
	}
	return h.Close()
}

// ForgetClaim removes carve's record of claim uid from dir, first of a
// release; it says whether there was one.
func ForgetClaim(dir, uid string) (bool, error) {
	if _, err := ClaimDir(dir, uid); err != nil {
		return false, err
	}
	err := os.Remove(claimRecord(dir, uid))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim record: %w", err)
	}
	return true, nil
}

// RecordLegacy records the claims of a runtime directory that an older
// carve reserved, which has no ClaimRecords: each claim whose root it can
// read is recorded as its root says then (the one time a root is
// believed), into a directory renamed into place whole, so that no reader
// sees some claims recorded and not others. Where ClaimRecords exists, it
// does nothing. Call it under the placement lock; it returns how many
// claims it recorded.
func RecordLegacy(dir string) (int, error) {
	rd := filepath.Join(dir, ClaimRecords)
	if _, err := os.Lstat(rd); !errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if _, err := os.Stat(filepath.Join(dir, ClaimsDir)); errors.Is(err, os.ErrNotExist) {
		return 0, nil // no claims: the first reservation makes the directory
	}
	claims, _, _, err := claimList(dir, false)
	if err != nil {
		return 0, err
	}
	tmp := rd + ".new"
	os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return 0, fmt.Errorf("claim records: %w", err)
	}
	n := 0
	for _, c := range claims {
		if c.Published {
			continue // carve-dra's, recorded in its own runtime directory
		}
		if err := copyBlock(filepath.Join(c.Dir, ClaimRoot), filepath.Join(tmp, c.UID), 0o600); err != nil {
			continue // skipped, as Claims skips it
		}
		n++
	}
	if err := os.Rename(tmp, rd); err != nil {
		os.RemoveAll(tmp)
		return 0, fmt.Errorf("claim records: %w", err)
	}
	return n, nil
}

// RepairClaimRoot writes claim c's root anew from carve's record of it
// where the root cannot be read (its pod removed or spoiled it), so that
// its processes start partitioned again; it says whether it did. Call it
// under the placement lock.
func RepairClaimRoot(dir string, c Claim) (bool, error) {
	root := filepath.Join(c.Dir, ClaimRoot)
	h, err := openPath(root)
	if err == nil {
		h.Close()
		return false, nil
	}
	tmp := filepath.Join(c.Dir, ".root.new")
	os.Remove(tmp)
	if err := copyBlock(claimRecord(dir, c.UID), tmp, rootPerm); err != nil {
		return false, fmt.Errorf("claim %s's root: %w", c.UID, err)
	}
	if err := os.Rename(tmp, root); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("claim %s's root: %w", c.UID, err)
	}
	return true, nil
}

// copyBlock copies the block at src, as it reads now, into a new file dst
// of mode perm, and checks that the copy reads as a claim's root does.
func copyBlock(src, dst string, perm os.FileMode) error {
	h, err := openPath(src)
	if err != nil {
		return err
	}
	buf := make([]byte, Size)
	err = guarded(src, func() { copy(buf, h.mem) })
	h.Close()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if err = f.Chmod(perm); err == nil { // past the umask
		_, err = f.Write(buf)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = readRoot(dst, &Snapshot{})
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// records reads the claim records of dir, by UID, and the UIDs whose
// record it cannot read (reported in skipped); legacy says dir has no
// ClaimRecords (an older carve's, or none reserved yet). A Shared dir
// has none.
func records(dir string) (recs map[string]Snapshot, bad map[string]bool, skipped []Bad, legacy bool, err error) {
	if Shared(dir) {
		// claims are carve-dra's, in its own runtime directory; in the node
		// directory (which every user may write) they are only published
		// copies (published.go): a record a user made there holds nothing
		return nil, nil, nil, false, nil
	}
	rd := filepath.Join(dir, ClaimRecords)
	des, err := os.ReadDir(rd)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, true, nil
	}
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("listing claim records: %w", err)
	}
	recs, bad = map[string]Snapshot{}, map[string]bool{}
	for _, de := range des {
		uid := de.Name()
		if _, err := ClaimDir(dir, uid); err != nil {
			continue // a record being written (.UID.new)
		}
		var s Snapshot
		path := filepath.Join(rd, uid)
		err := readRoot(path, &s)
		if b, ok := badOf(path, err); ok {
			skipped = append(skipped, b)
			bad[uid] = true
			continue
		}
		if err == nil {
			recs[uid] = s
		}
	}
	return recs, bad, skipped, false, nil
}
