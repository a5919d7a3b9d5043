// The node directory: one runtime directory for every user of a node
// (NodeDir), which root makes (InitNodeDir, carve node init) and Dir uses
// when it exists, after checking that root made it (trustNodeDir); and
// what differs in a directory several users share (Shared): each file is
// its maker's, the others read it, and Writable says whose a block is.

package ctl

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// NodeDirDefault is the node directory where CARVE_NODE_DIR names none.
// It is not under /run/carve, carve-dra's runtime directory, which stays
// root's alone (mode 0700): the claims' directories in it hold files every
// process of a pod writes (mode 0666), which no other user of the node may
// reach.
const NodeDirDefault = "/run/carve-node"

// NodeDir is the node directory's path: $CARVE_NODE_DIR, else
// NodeDirDefault. It is used only where it exists.
func NodeDir() string {
	if d := os.Getenv("CARVE_NODE_DIR"); d != "" {
		return d
	}
	return NodeDirDefault
}

// NodeDirStat is what the trust check reads of the node directory: its
// type and mode (os.FileMode, ModeSymlink for a link) and its owner.
type NodeDirStat struct {
	Mode     os.FileMode
	UID, GID uint32
}

func nodeDirStat(st os.FileInfo) NodeDirStat {
	s := NodeDirStat{Mode: st.Mode()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.UID, s.GID = sys.Uid, sys.Gid
	} else {
		s.UID = ^uint32(0)
	}
	return s
}

// trustNodeDir says whether the node directory path, as st describes it,
// is one root made for the node's users: a directory (no link), owned by
// uid 0, with the sticky bit (each file is its maker's to remove or
// rename), and one the caller (uid, in groups) may write. A directory
// others may write without the sticky bit fails the sticky check. Its
// error says what is wrong and how to fix it.
func trustNodeDir(path string, st NodeDirStat, uid int, groups []int) error {
	const fix = "remove it and run 'sudo carve node init' (or unset CARVE_NODE_DIR, or set CARVE_RUNTIME_DIR for a directory of your own)"
	switch {
	case st.Mode&os.ModeSymlink != 0:
		return fmt.Errorf("node directory %s is a symbolic link, not a directory root made: %s", path, fix)
	case !st.Mode.IsDir():
		return fmt.Errorf("node directory %s is not a directory (%s): %s", path, st.Mode.Type(), fix)
	case st.UID != 0:
		return fmt.Errorf("node directory %s is owned by %s, not root (mode %s): anyone could have made it; %s",
			path, UserName(st.UID), modeString(st.Mode), fix)
	case st.Mode&os.ModeSticky == 0:
		return fmt.Errorf("node directory %s has mode %s, without the sticky bit: a user could remove another's files; "+
			"'sudo chmod 1777 %s' (or 1770 for a group)", path, modeString(st.Mode), path)
	}
	if !mayWrite(st, uid, groups) {
		return fmt.Errorf("node directory %s (mode %s, group %s) does not let %s write: ask root to add you to its group",
			path, modeString(st.Mode), groupName(st.GID), UserName(uint32(uid)))
	}
	return nil
}

// mayWrite says whether uid, in groups, may make files in a directory of
// st's mode and owner.
func mayWrite(st NodeDirStat, uid int, groups []int) bool {
	p := st.Mode.Perm()
	switch {
	case uid == 0:
		return true
	case uint32(uid) == st.UID:
		return p&0o300 == 0o300
	case slices.Contains(groups, int(st.GID)):
		return p&0o030 == 0o030
	}
	return p&0o003 == 0o003
}

// nodeDir is the node directory, if it exists and is trusted; ok is false
// where it does not exist. Its error says why one that exists is not used:
// a user who makes it first must not split the node's view, so carve never
// falls back from it to a directory of its own.
func nodeDir() (dir string, ok bool, err error) {
	d := NodeDir()
	st, err := os.Lstat(d)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("node directory %s: %w (its parent must let every user through)", d, err)
	}
	groups, err := os.Getgroups()
	if err != nil {
		return "", false, fmt.Errorf("node directory %s: %w", d, err)
	}
	groups = append(groups, os.Getegid())
	if err := trustNodeDir(d, nodeDirStat(st), os.Geteuid(), groups); err != nil {
		return "", false, err
	}
	f, _, err := OpenLock(d) // root's carve makes it where it is missing
	if err != nil {
		return "", false, err
	}
	f.Close()
	return d, true, nil
}

// OpenLock opens the placement lock of the runtime directory dir
// (LockName) for flock, for writing where the caller may (writable). In a
// directory of the caller's own it makes the lock, mode 0600, if there is
// none. In a Shared one (the node directory) the lock must be a regular
// file of root's or of the directory's owner, whom alone the sticky bit
// lets remove it (trustLock): anyone else who made it could remove it and
// make another, and the others would lock another file than theirs. There
// only root and the directory's owner make it, mode 0644, which the others
// lock through a read-only descriptor (flock needs none other); the error
// of a lock that is missing or refused names 'sudo carve node init'.
func OpenLock(dir string) (f *os.File, writable bool, err error) {
	path := filepath.Join(dir, LockName)
	dst, err := os.Stat(dir)
	if err != nil {
		return nil, false, fmt.Errorf("placement lock: %w", err)
	}
	shared, owner := dst.Mode()&os.ModeSticky != 0, nodeDirStat(dst).UID
	perm, create := os.FileMode(0o600), os.O_CREATE
	if shared {
		perm = 0o644
		if euid := uint32(os.Geteuid()); euid != 0 && euid != owner {
			create = 0
		}
	}
	const flags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK // neither a link nor a FIFO's wait
	writable = true
	f, err = os.OpenFile(path, os.O_RDWR|create|flags, perm)
	if errors.Is(err, os.ErrPermission) {
		writable = false
		f, err = os.OpenFile(path, os.O_RDONLY|flags, 0)
	}
	switch {
	case errors.Is(err, os.ErrNotExist) && create == 0:
		return nil, false, fmt.Errorf("the shared directory %s has no placement lock %s: run 'sudo carve node init' (root's carve makes it)", dir, path)
	case errors.Is(err, syscall.ELOOP):
		return nil, false, fmt.Errorf("placement lock %s is a symbolic link: remove it and run 'sudo carve node init'", path)
	case err != nil:
		return nil, false, fmt.Errorf("placement lock: %w", err)
	}
	st, err := f.Stat()
	if err == nil && shared {
		err = trustLock(path, nodeDirStat(st), owner)
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	if s := nodeDirStat(st); writable && s.UID == uint32(os.Geteuid()) && st.Mode().Perm() != perm {
		f.Chmod(perm) // past the umask, where it is ours
	}
	return f, writable, nil
}

// trustLock says whether the placement lock path of a Shared directory
// owned by dirUID, as st describes it, is one to lock: a regular file of
// root's or of the directory's owner. Its error says what is wrong and
// how to fix it.
func trustLock(path string, st NodeDirStat, dirUID uint32) error {
	const fix = "remove it and run 'sudo carve node init'"
	switch {
	case !st.Mode.IsRegular():
		return fmt.Errorf("placement lock %s is not a regular file (%s): %s", path, st.Mode.Type(), fix)
	case st.UID != 0 && st.UID != dirUID:
		return fmt.Errorf("placement lock %s is owned by %s, not root: its owner could remove it and make another, "+
			"and placements would overlap; %s", path, UserName(st.UID), fix)
	}
	return nil
}

// InitNodeDir makes the node directory path, as root: owned by root, mode
// 1777, or with gid >= 0 mode 1770 of group gid; and the placement lock
// file in it (root's, mode 0644, which every user locks through a
// read-only descriptor), the directory of the claims carve-dra publishes
// there (PublishedDir) and that of root's tenant records (TenantRecords),
// each root's, mode 0755. One that exists is
// set so if it is a directory of root's; one of another user's, or a
// link, is refused (whoever made it may have left files in it).
func InitNodeDir(path string, gid int) error {
	if os.Geteuid() != 0 {
		return errors.New("making the node directory needs root (sudo carve node init)")
	}
	mode, group := os.FileMode(0o777)|os.ModeSticky, 0
	if gid >= 0 {
		mode, group = 0o770|os.ModeSticky, gid
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("node directory: %w", err)
	}
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("node directory: %w", err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("node directory: %w", err)
	}
	if s := nodeDirStat(st); !st.IsDir() || s.UID != 0 {
		return fmt.Errorf("%s exists and is not a directory of root's (%s, owned by %s): remove it and run again",
			path, modeString(st.Mode()), UserName(s.UID))
	}
	if err := os.Lchown(path, 0, group); err != nil {
		return fmt.Errorf("node directory: %w", err)
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("node directory: %w", err)
	}
	f, _, err := OpenLock(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || nodeDirStat(st).UID != 0 {
		return fmt.Errorf("%s is not a file of root's: remove it and run again", f.Name())
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("node directory's placement lock: %w", err)
	}
	if _, err := publishedDir(path); err != nil { // carve-dra's claims, root's alone
		return err
	}
	_, err = rootDir(filepath.Join(path, TenantRecords), "tenant records")
	return err
}

// LockName is the placement lock's file name in a runtime directory
// (place.LockFile).
const LockName = ".place.lock"

// Shared says whether dir is one several users share: its sticky bit is
// set (the node directory, a claim's directory). There each file carve
// makes is readable by all (control blocks 0644, node blocks 0644) and is
// its maker's alone to write and remove; node blocks are root's alone to
// make (WritesNodes).
func Shared(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.Mode()&os.ModeSticky != 0
}

// WritesNodes says whether this carve makes and writes the node blocks in
// dir, their GPUs' directories and LS files: in a Shared directory (the
// node directory) only root and the directory's owner do, root's carve
// daemon seating every user's LS tenants (place.Fence); elsewhere (a
// user's own directory, carve-dra's) whoever places there.
func WritesNodes(dir string) bool {
	st, err := os.Stat(dir)
	if err != nil || st.Mode()&os.ModeSticky == 0 {
		return true
	}
	euid := uint32(os.Geteuid())
	return euid == 0 || euid == nodeDirStat(st).UID
}

// BlockPerm is the mode of a control block carve makes in dir: 0644 where
// dir is Shared (others read it: placement, listing, tide), else 0600.
func BlockPerm(dir string) os.FileMode {
	if Shared(dir) {
		return 0o644
	}
	return 0o600
}

// NotYours is the error of a change to a block whose file is another
// user's (carve set on another user's tenant).
type NotYours struct {
	Path string
	PID  int
	UID  uint32
}

func (e *NotYours) Error() string {
	return fmt.Sprintf("permission denied: pid %d is %s's (its control block %s): only that user and root may change it",
		e.PID, UserName(e.UID), e.Path)
}

func (e *NotYours) Unwrap() error { return os.ErrPermission }

// Writable is nil where h was mapped for writing, else a *NotYours that
// names the block's owner.
func (h *Handle) Writable() error {
	if !h.ro {
		return nil
	}
	e := &NotYours{Path: h.Path, PID: int(h.b.PID), UID: ^uint32(0)}
	if st, err := h.f.Stat(); err == nil {
		e.UID = nodeDirStat(st).UID
	}
	return e
}

// UserName is uid's name and number ("nobody (uid 65534)"), or the number.
func UserName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return fmt.Sprintf("user %s (uid %s)", u.Username, id)
	}
	return "uid " + id
}

// groupName is gid's name and number, or the number.
func groupName(gid uint32) string {
	id := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(id); err == nil {
		return fmt.Sprintf("%s (gid %s)", g.Name, id)
	}
	return "gid " + id
}

// modeString is a directory's mode as chmod takes it (1777).
func modeString(m os.FileMode) string {
	n := uint32(m.Perm())
	if m&os.ModeSticky != 0 {
		n |= 0o1000
	}
	if m&os.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&os.ModeSetuid != 0 {
		n |= 0o4000
	}
	return fmt.Sprintf("%04o", n)
}
