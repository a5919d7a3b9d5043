// Blocks carve cannot read: Bad, what a listing skips and says why, the
// checks a block passes before it is listed, and Read, the listing of a
// whole runtime directory with the blocks it skipped.

package ctl

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"

	"github.com/carve-gpu/carve/internal/topo"
)

// Bad is a block a listing skipped because carve cannot read it: a block
// is any tenant's to write (a claim's directory is its pod's), so one
// block carve cannot read is reported, never fatal to the listing.
type Bad struct {
	Path string `json:"path"`
	// Reason is one word: symlink, not-regular, size, magic, mask,
	// overlap, fault, open, unrecorded (a claim's directory, not a
	// block: no record, yet a process runs in it), owner (a published
	// claim or tenant record not root's), published (the directory of
	// published claims, not trusted: PublishedDir), record (a tenant
	// record that does not parse), records (the directory of tenant
	// records, not trusted: TenantRecords) or changed (a live block whose
	// TPCs or memory limit are not its tenant record's, which others
	// count: Records.Changed; the block is listed too).
	Reason string `json:"reason"`
	Why    string `json:"why"`
	err    error
}

func (b *Bad) Error() string { return b.Why }
func (b *Bad) Unwrap() error { return b.err }

// badOf is err as a Bad of path, if it says a block cannot be read (not
// that it is gone).
func badOf(path string, err error) (Bad, bool) {
	var b *Bad
	switch {
	case err == nil || errors.Is(err, os.ErrNotExist):
		return Bad{}, false
	case errors.As(err, &b):
		return *b, true
	}
	return Bad{Path: path, Reason: "open", Why: err.Error(), err: err}, true
}

// openError is why path could not be opened: a Bad, or an error that
// wraps os.ErrNotExist where there is no file.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("control block %s: %w", path, err)
	case errors.Is(err, syscall.ELOOP):
		return &Bad{Path: path, Reason: "symlink", Why: fmt.Sprintf("control block %s is a symbolic link", path), err: err}
	case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENXIO):
		return &Bad{Path: path, Reason: "not-regular", Why: fmt.Sprintf("control block %s is not a regular file", path), err: err}
	}
	return &Bad{Path: path, Reason: "open", Why: fmt.Sprintf("control block %s: %v", path, err), err: err}
}

// checkFile refuses what is not a regular file of Size bytes.
func checkFile(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &Bad{Path: path, Reason: "not-regular", Why: fmt.Sprintf("control block %s is not a regular file (%s)", path, st.Mode().Type())}
	}
	if st.Size() != Size {
		return &Bad{Path: path, Reason: "size", Why: fmt.Sprintf("control block %s has the wrong size: %d bytes, want %d", path, st.Size(), Size)}
	}
	return nil
}

// checkMasks refuses a block with a partition that holds none of its
// GPU's live TPCs: no placement makes one.
func checkMasks(path string, s Snapshot) error {
	for _, p := range s.Parts() {
		if p.Live != (topo.Enable{}) && p.Mask.Enable().And(p.Live).Count() == 0 {
			return &Bad{Path: path, Reason: "mask", Why: fmt.Sprintf("control block %s: its mask %s leaves none of the GPU's live TPCs (%s)", path, p.Mask, p.Live)}
		}
	}
	return nil
}

// guarded runs f, which reads or writes mapped blocks, and returns a Bad
// of path if a block's file was cut short under it (the fault that
// follows is made a panic, and recovered).
func guarded(path string, f func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &Bad{Path: path, Reason: "fault", Why: fmt.Sprintf("control block %s: cut short while read (%v)", path, r)}
		}
	}()
	f()
	return nil
}

// Listing is what Read finds in a runtime directory: Scan's live and
// ended blocks, Claims' claims and interrupted reservations, root's
// tenant records (ReadRecords), and what all three skipped (and the
// blocks not as their records say: Records.Changed).
type Listing struct {
	Live, Ended []Entry
	Claims      []Claim
	Pending     []string
	Records     Records
	Skipped     []Bad
}

// Read lists the runtime directory dir as Scan and Claims do, and says
// which blocks they skipped and why.
func Read(dir string) (Listing, error) { return read(dir, false) }

// Peek lists dir as Read does, and changes nothing there: the blocks of
// ended processes stay, their memory not credited back (Read, List and
// Claims remove them). For readers that run often and must write
// nothing where nothing is asked of them (the SLO controller).
func Peek(dir string) (Listing, error) { return read(dir, true) }

// read is Read; peek: Peek.
func read(dir string, peek bool) (Listing, error) {
	var l Listing
	var err error
	if l.Live, l.Ended, l.Skipped, err = scan(dir, false, peek); err != nil {
		return l, err
	}
	var skipped []Bad
	if l.Claims, l.Pending, skipped, err = claimList(dir, peek); err != nil {
		return l, err
	}
	l.Skipped = append(l.Skipped, skipped...)
	l.Records, skipped = ReadRecords(dir)
	l.Skipped = append(append(l.Skipped, skipped...), l.Records.Changed(l.Live)...)
	return l, nil
}
