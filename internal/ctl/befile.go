// The GPU's BE files (shim/carve_node.h), where BE shims stamp their
// launches and LS shims read them to tell their busy periods alone: one a
// writer, so that no BE tenant can hide another's launches. In a user's
// own runtime directory the user's tenants share one (NodeBEFile); in the
// node directory each user with a BE tenant on the GPU has one of its
// own; in carve-dra's runtime directory each BE claim, linked into its
// directory. carve makes and removes them at every fence (place.fence).

package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

// The BE files' names in a GPU's directory beyond NodeBEFile: a user's
// in the node directory (CARVE_NODE_BE_USER, by uid) and a claim's (by
// its UID), both of NodeBEPrefix; and how many an LS shim reads at most
// (CARVE_NODE_BE_FILES: with more it counts no busy period alone).
const (
	NodeBEPrefix = "be-"
	beUserFile   = NodeBEPrefix + "u%d"
	beClaimFile  = NodeBEPrefix + "c-"
	NodeBEFiles  = 64
)

// BEUserPerm is the mode of a user's BE file in the node directory: that
// user's to write (handed to it by root), every LS tenant's to read. A
// claim's is 0666 (its pod runs under any uid; the others get the GPU's
// directory read-only), one in a user's own directory 0600.
const BEUserPerm os.FileMode = 0o644

// BE is the writer of one BE file on the node block Node: a BE claim
// (Claim, its UID, linked into its directory Dir), or in a Shared
// directory the BE tenants of the user UID, or elsewhere the BE tenants
// of the directory's user.
type BE struct {
	Node   string
	Claim  string
	Dir    string
	UID    int
	Shared bool
}

// Name is its BE file's name in the GPU's directory.
func (b BE) Name() string {
	switch {
	case b.Claim != "":
		return beClaimFile + b.Claim
	case b.Shared:
		return fmt.Sprintf(beUserFile, b.UID)
	}
	return NodeBEFile
}

// IsBEFile says whether name, in a GPU's directory, is a BE file's (as
// the LS shims read them): NodeBEFile, or NodeBEPrefix with no dot (not
// one being made).
func IsBEFile(name string) bool {
	return name == NodeBEFile || strings.HasPrefix(name, NodeBEPrefix) && !strings.Contains(name, ".")
}

// BEsOf are the writers of BE files among blocks (of live processes in
// dir, as carve believes them: recs.Of) and claims (a published one's are
// in carve-dra's directory): one for each user (in a Shared directory,
// the owner of the block) and node block with a BE tenant, and for each
// BE claim and node block.
func BEsOf(dir string, recs Records, blocks []Entry, claims []Claim) []BE {
	var out []BE
	seen := map[BE]bool{}
	add := func(b BE) {
		if !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	shared := Shared(dir)
	for _, e := range blocks {
		if e = recs.Of(e); e.Class != ClassBE {
			continue
		}
		uid := -1
		if shared {
			if uid = OwnerOf(e.Path); uid < 0 {
				continue
			}
		}
		for _, p := range e.Parts() {
			if p.Node != "" {
				add(BE{Node: p.Node, UID: uid, Shared: shared})
			}
		}
	}
	for _, c := range claims {
		if c.Root.Class != ClassBE || c.Published {
			continue
		}
		for _, p := range c.Root.Parts() {
			if p.Node != "" {
				add(BE{Node: p.Node, Claim: c.UID, Dir: c.Dir})
			}
		}
	}
	return out
}

// BEFiles brings the BE files of the directory of each of nodes (dir's
// node blocks: Nodes) in line with bes: each writer's made where it has
// none (MakeBE), and every other BE file there removed, so that a user or
// claim with no BE tenant left, or a GPU's one file of an older carve,
// has none; and the link to that one file an older carve made beside each
// node block (its name and NodeBELink, in dir: a claim's own link is in
// its directory) removed. Call it under the placement lock, with every
// writer of dir (BEsOf). Where the caller does not write dir's node
// blocks (WritesNodes) it does nothing.
func BEFiles(dir string, nodes []*Node, bes []BE) error {
	if !WritesNodes(dir) {
		return nil
	}
	var errs []error
	for _, n := range nodes {
		want := map[string]bool{}
		for _, b := range bes {
			if b.Node == n.Name() {
				want[b.Name()] = true
				errs = append(errs, MakeBE(dir, b))
			}
		}
		os.Remove(n.Path + NodeBELink)
		d := n.Path + NodeDirSuffix
		des, err := os.ReadDir(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, de := range des {
			if IsBEFile(de.Name()) && !want[de.Name()] {
				os.Remove(filepath.Join(d, de.Name()))
			}
		}
	}
	return errors.Join(errs...)
}

// MakeBE makes b's BE file in the directory of its node block in dir
// where there is none: a claim's mode 0666, linked into its directory as
// the block's name and NodeBELink (made anew where it names another
// file); a user's in a Shared directory that user's, mode BEUserPerm
// (userBE); else the caller's, 0600. Call it under the placement lock.
func MakeBE(dir string, b BE) error {
	path := filepath.Join(dir, b.Node+NodeDirSuffix, b.Name())
	perm, uid := os.FileMode(0o600), -1
	switch {
	case b.Claim != "":
		perm = 0o666
	case b.Shared:
		perm, uid = BEUserPerm, b.UID
	}
	fill := func(mem []byte) {
		f := (*BEFile)(unsafe.Pointer(&mem[0]))
		f.Magic, f.Version, f.Size = BEMagic, NodeVersion, BESize
	}
	var err error
	if b.Shared {
		err = userBE(path, uid, fill)
	} else if f, ferr := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0); ferr == nil {
		f.Close()
	} else if errors.Is(ferr, os.ErrNotExist) {
		err = makeFile(path, perm, uid, BESize, fill)
	} else {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("BE file: %w", err)
	}
	if b.Claim == "" {
		return nil
	}
	link := filepath.Join(b.Dir, b.Node+NodeBELink)
	fst, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("BE file: %w", err)
	}
	if lst, err := os.Lstat(link); err == nil && os.SameFile(lst, fst) {
		return nil
	}
	os.Remove(link) // a link to another file: the GPU's one of an older carve
	if err := os.Link(path, link); err != nil {
		return fmt.Errorf("BE file in the claim's directory: %w", err)
	}
	return nil
}

// userBE makes uid's BE file at path in a Shared directory. One there is
// kept, its mode made BEUserPerm, only where carve could have made it: a
// regular file of BESize bytes, uid's, of one link. Anything else is
// replaced by a new file (makeFile: renamed over it), for a GPU's
// directory that a user's carve made (mode 1777, the user's) before root
// took it over may hold what another user put there first under uid's
// name: a file that user still has open for writing, or a link or a FIFO,
// which no fence could take over. A BE file holds nothing worth keeping.
func userBE(path string, uid int, fill func([]byte)) error {
	if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0); err == nil {
		var sys *syscall.Stat_t
		st, err := f.Stat()
		if err == nil {
			sys, _ = st.Sys().(*syscall.Stat_t)
		}
		if sys != nil && st.Mode().IsRegular() && st.Size() == BESize && int(sys.Uid) == uid && sys.Nlink == 1 {
			if st.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != BEUserPerm {
				err = f.Chmod(BEUserPerm)
			}
			f.Close()
			return err
		}
		f.Close()
	}
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		os.Remove(path) // makeFile's rename fails where it holds anything
	}
	return makeFile(path, BEUserPerm, uid, BESize, fill)
}
