// The node directory seen from carve-dra's runtime directory: a claim's
// placement there also avoids the TPCs and counts the memory of the node
// directory's tenants (read, never written), and publishes every claim
// into it (ctl.Publish), so that users' placements there avoid the
// claims'.

package place

import (
	"errors"
	"fmt"
	"os"

	"github.com/carve-gpu/carve/internal/ctl"
)

// nodeView is the node directory (ctl.NodeView); tests name their own.
var nodeView = ctl.NodeView

// view is the node directory as a claim's placement, release or Publish
// in another runtime directory sees it: its path ("": none, or not
// trusted), the unlock of its placement lock, and why it is not seen as
// it should be (err: not trusted, not locked, not read or not written),
// which never stops the claim's placement.
type view struct {
	dir    string
	unlock func()
	err    error
}

// openView takes the node directory's placement lock for a change to the
// claims of dir, whose lock the caller holds (so the order is always
// carve-dra's runtime directory, then the node directory; users' carve
// takes only the latter). A node directory that is missing, is dir, or is
// not trusted is not seen. Where its lock is not had in Timeout (a user
// may hold it for ever), the view is read and written without it: the
// claim's placement then races only a placement of carve run that holds
// the lock that long, and a user can write a block of any mask anyway.
func openView(dir string) *view { return viewOf(dir, true) }

// viewOf is openView; unlocked: without the node directory's lock, for a
// reader that writes nothing there (Fence).
func viewOf(dir string, locked bool) *view {
	v := &view{unlock: func() {}}
	nd, ok, err := nodeView()
	if err != nil {
		v.err = fmt.Errorf("the node directory is not trusted, so claims are not published in it: %w", err)
		return v
	}
	if !ok || sameDir(nd, dir) {
		return v
	}
	v.dir = nd
	if !locked {
		return v
	}
	if unlock, err := Lock(nd, Timeout); err != nil {
		v.err = fmt.Errorf("the node directory's lock (read and written without it): %w", err)
	} else {
		v.unlock = unlock
	}
	return v
}

// sameDir says whether a and b are one directory.
func sameDir(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// tenants are the live blocks of the node directory's tenants, read as
// ctl.Peek reads them (nothing there is removed, credited or written),
// each user's tenant as root's record of it says (ctl.Records.View).
func (v *view) tenants() []ctl.Entry {
	if v.dir == "" {
		return nil
	}
	l, err := ctl.Peek(v.dir)
	if err != nil {
		v.err = errors.Join(v.err, fmt.Errorf("reading the node directory's tenants: %w", err))
	}
	return l.Records.View(l.Live, l.Claims, os.Geteuid()) // another user's, as root's record of it says
}

// publish writes dir's claims into the node directory (ctl.Publish).
func (v *view) publish(dir string) {
	if v.dir == "" {
		return
	}
	if err := ctl.Publish(dir, v.dir); err != nil {
		v.err = errors.Join(v.err, err)
	}
}

// Publish brings the claims published in the node directory up to date
// with those reserved in dir, carve-dra's runtime directory (ctl.Publish),
// under both directories' locks; carve-dra calls it when it starts. Its
// error says why the node directory is not up to date.
func Publish(dir string) error {
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	v := openView(dir)
	defer v.unlock()
	v.publish(dir)
	return v.err
}
