// The hostile-tenant suite: the one place to read what a tenant can do to
// another through carve. Each attack is a case here, on twin runtime
// directories, one attacked and one not, or a test elsewhere that the
// index (hostileElsewhere) names; each says what the attacker can still
// do to itself, and checks that every other tenant's placement, memory
// limit, latency gate (the node block's fixed TPCs, lease and seats) and
// listing are those of the twin. What does not hold is README.md's threat model.

package place

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/topo"
)

// hostileElsewhere indexes the attacks tested beside what they attack:
// the attack, what the attacker can still do to itself, and the test.
var hostileElsewhere = []struct{ attack, self, file, test string }{
	{"a block of zeros, the wrong size, a link, a FIFO, a directory, no live TPC", "its own processes run unlisted", "../ctl/unreadable_test.go", "TestUnreadableBlocksSkipped"},
	{"a block cut short while carve reads it", "the same", "../ctl/unreadable_test.go", "TestBlockCutShort"},
	{"a claim's root of zeros beside placement", "its next processes start unpartitioned until prepared again", "unreadable_test.go", "TestPlaceBesideUnreadableRoot"},
	{"a claim's root rewritten: every TPC, LS, no memory limit", "its own processes run under what it wrote", "unreadable_test.go", "TestPlaceBesideRewrittenRoot"},
	{"a claim's root of zeros beside prepare; written anew when prepared again", "the same", "../dra/checkpoint_test.go", "TestPrepareBesideUnreadableRoot"},
	{"a claim's root rewritten, then carve-dra restarted and the claim unprepared", "the same", "../dra/checkpoint_test.go", "TestPrepareBesideRewrittenRoot"},
	{"a claim's root rewritten, spoiled, linked or removed: carve's record believed", "the same", "../ctl/claimrecord_test.go", "TestClaimRecordBelieved"},
	{"carve ls and carve run beside a root of zeros", "the same", "../../cmd/carve/ls_test.go", "TestUnreadableClaimRoot"},
	{"carve daemon's metrics beside unreadable blocks", "the same", "../daemon/unreadable_test.go", "TestMetricUnreadable"},
	{"a busy LS file no one renews, a lease of an hour, a heartbeat ahead", "none: it holds BEs one lease at most", "../../shim/shimtest/tide_node_test.go", "TestBusySlotHoldsBEOneLease"},
	{"garbage in another tenant's LS file or the node block, from another uid", "it writes its own LS file alone", "../../shim/shimtest/tide_node_test.go", "TestLSFilesNotWritableByOthers"},
	{"two users' tenants in the node directory, under their uids: either writing the node block", "each writes its own LS or BE file alone; the LS tenant's work holds the other user's BE", "../../shim/shimtest/node_dir_test.go", "TestNodeDirTwoUsersEndToEnd"},
	{"a user's BE tenant in the node directory writing its BE file back to 0 to hide another user's BE launch", "it hides its own user's launches alone", "../../shim/shimtest/node_dir_test.go", "TestBEFileOwnPerWriter"},
	{"a user's carve writing a node block, or a user another's LS file, in the node directory", "it writes its own tenants' LS files", "nodewriter_test.go", "TestNodeDirOnlyRootWritesNodes"},
	{"node blocks a user's carve made in the node directory before root's alone did", "none past root's next fence", "nodewriter_test.go", "TestNodeDirTakesOverUsersNodes"},
	{"a user's BE tenant in the node directory whose block, or a child's, says LS: root's record believed, no seat", "its own processes run as its blocks say (share, memory limit, mask)", "tenantrecord_test.go", "TestNodeDirClassFromRecord"},
	{"a user's BE tenant in the node directory whose block says LS and a 10 us SLO: the SLO controller takes root's record", "the same", "../slo/nodedir_test.go", "TestNodeDirSLOFromRecord"},
	{"a tenant record a user planted, a link, a records directory a user made first", "none", "tenantrecord_test.go", "TestTenantRecordsRoots"},
	{"a user's tenant in the node directory whose block, after root recorded it, says every TPC and the GPU's memory, or moves onto another's TPCs with --share: root's record believed by other users", "its own processes run on the TPCs and under the limit its block says", "tenantpolicy_test.go", "TestNodeDirTPCsFromRecord"},
	{"a program that rewrites its block before root records its tenant", "none: carve run waits for the record", "nodewriter_test.go", "TestAwaitRecord"},
	{"the node block's lease rewritten", "none past the next placement or daemon pass", "../ctl/node_test.go", "TestNodeLeaseReset"},
	{"a killed LS tenant's busy entry", "none", "../../shim/shimtest/tide_test.go", "TestLeaseAfterLSDies"},
	{"a claim's processes under other uids: one memory account", "each holds what the claim's limit leaves", "../../shim/shimtest/inherit_test.go", "TestClaimAccountSharedAcrossUIDs"},
	{"a zombie's pid taken for a running tenant", "none", "../ctl/alive_test.go", "TestZombieHasEnded"},
	{"control characters in a command line or claim name", "none", "../status/escape_test.go", "TestListingsEscapeWhatTenantsControl"},
	{"a claim's process block with a 10 us SLO or the LS class: the SLO controller takes the record's", "it may say it is busy (BEs held under an SLO of its record)", "../slo/claim_test.go", "TestClaimSLOFromRecord"},
	{"a BE claim's block with a share of 0 while the SLO controller steers it: the GPU's level is kept by the controller", "it may lower its own share", "../slo/claim_test.go", "TestClaimBECannotDragTheLevel"},
	{"an MPS directory another user planted", "none", "../mps/mps_test.go", "TestUntrustedDirectory"},
	{"a --shim that is not carve's", "none", "../preload/preload_test.go", "TestVerifyRefusesWhatIsNotTheShim"},
	{"a block made by hand in the node directory naming every TPC, the GPU's memory and the whole epoch: root records what was free", "its own process runs as its block says", "judge_test.go", "TestNodeDirHandBlockJudged"},
	{"a user's placement in the window between another's carve set and root's next fence", "none: the move is believed at once", "judge_test.go", "TestNodeDirMoveSeenBeforeFence"},
	{"the node directory with root's daemon stopped: users' blocks as they say", "none: users' placements fail", "tenantpolicy_test.go", "TestNodeDirNoFence"},
	{"a user holding the node directory's placement lock", "it delays others' placements 2 s", "passover_test.go", "TestNodeDirLockPassedOver"},
	{"a block written through its mapping before and after an honest placement, to be recorded first", "its own process; the honest carve run fails, never runs", "passover_test.go", "TestNodeDirLostRace"},
	{"a file, link or FIFO planted at another user's BE file name before root takes the GPU's directory over", "none past root's next fence", "nodewriter_test.go", "TestNodeDirBEFilePlanted"},
	{"a user's BE of every free TPC beside claims, and a BE claim beside users' tenants", "it keeps what it took; the other side's LS tenants keep off it", "claimview_test.go", "TestNodeDirBEHeldFromClaims"},
	{"a BE file removed and made anew under a running BE tenant", "none: it stamps the new one", "../../shim/shimtest/tide_ls_test.go", "TestBEOwnFileReplaced"},
}

// TestHostileIndex: every test the index names is where it says.
func TestHostileIndex(t *testing.T) {
	for _, h := range hostileElsewhere {
		b, err := os.ReadFile(h.file)
		if err != nil || !strings.Contains(string(b), "func "+h.test+"(") {
			t.Errorf("%s: no %s in %s (%v)", h.attack, h.test, h.file, err)
		}
	}
}

// twins are two runtime directories reserved alike: claims a (LS, 16
// TPCs, 4 GiB), b (LS, 16 TPCs, 4 GiB, the attacker's) and c (no class,
// 8 TPCs).
func twins(t *testing.T) [2]string {
	top, _ := topologyJSON(t)
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		for _, c := range []struct {
			uid   string
			n     string
			class uint32
		}{{"uid-a", "16", ctl.ClassLS}, {"uid-b", "16", ctl.ClassLS}, {"uid-c", "8", ctl.ClassNone}} {
			r := Request{Claim: &Claim{UID: c.uid, Name: "ns/" + c.uid}, Spec: count(t, c.n), Policy: ctl.Policy{Class: c.class, Mem: ctl.MemLimit{Bytes: 4 << 30}}}
			if _, err := Place(dir, top, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dirs
}

// others is what the tenants other than claim b get of carve in dir after
// a placement of a new LS claim d: d's TPCs, the holders but b (TPCs,
// class, memory limit), the node block's fixed TPCs, lease and seats
// (which BE tenants read the LS files of, and the TPCs each reserves), and
// the listing of a and c.
func others(t *testing.T, dir string) string {
	t.Helper()
	top, _ := topologyJSON(t)
	d, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-d", Name: "ns/d"}, Spec: count(t, "8"), Policy: ctl.Policy{Class: ctl.ClassLS}})
	if err != nil {
		return "placing d: " + err.Error()
	}
	var out strings.Builder
	fmt.Fprintf(&out, "d: %s\n", d.Set)
	hs, err := Holders(dir, top)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Claim != "uid-b" {
			fmt.Fprintf(&out, "%s: %s class %d mem %d\n", h.Claim, h.TPCs, h.Class, h.Mem)
		}
	}
	n, err := ctl.OpenNode(dir, ctl.NodeName(top.UUID), top.Live())
	if err != nil {
		t.Fatal(err)
	}
	b := nodeBlock(n)
	fmt.Fprintf(&out, "fixed %v lease %d\n", n.Fixed(), atomic.LoadUint64(&b.LeaseNS))
	for i := range b.Slots {
		if s := &b.Slots[i]; b.Used&(1<<i) != 0 && !strings.HasPrefix(string(s.Claim[:]), "uid-b") {
			fmt.Fprintf(&out, "seat %d: kind %d pid %d claim %q reserved %v\n", i, s.Kind, s.PID, strings.TrimRight(string(s.Claim[:]), "\x00"), s.Reserved)
		}
	}
	n.Close()
	l, err := ctl.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Claims {
		if c.UID != "uid-b" {
			fmt.Fprintf(&out, "listed %s %v %d %d\n", c.UID, c.Root.Mask, c.Root.Class, c.Root.Memory.Limit)
		}
	}
	return out.String()
}

// nodeBlock maps n's file again, as a tenant does, and returns its block.
func nodeBlock(n *ctl.Node) *ctl.NodeBlock {
	f, err := os.OpenFile(n.Path, os.O_RDWR, 0)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, ctl.NodeSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		panic(err)
	}
	return (*ctl.NodeBlock)(unsafe.Pointer(&mem[0]))
}

// TestHostileClaim: claim b's pod attacks what its directory holds, its
// root, its processes' blocks and the node block linked there, as its
// containers may under any uid; every other claim's placement, memory
// limit, latency gate and listing are the twin's.
func TestHostileClaim(t *testing.T) {
	top, _ := topologyJSON(t)
	root := func(cd string) string { return filepath.Join(cd, ctl.ClaimRoot) }
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("the attack, %s: %v", what, err)
		}
	}
	for _, tc := range []struct {
		attack, self string
		do           func(t *testing.T, cd string)
		spoiled      bool // the root cannot be read after it
	}{
		{"root of zeros", "its next processes find no root to copy and start unpartitioned (refused without CARVE_ALLOW_UNPARTITIONED)", func(t *testing.T, cd string) {
			check(t, "writing zeros", os.WriteFile(root(cd), make([]byte, ctl.Size), 0o666))
		}, true},
		{"root truncated", "the same", func(t *testing.T, cd string) { check(t, "truncating", os.Truncate(root(cd), 100)) }, true},
		{"root a link to another claim's", "the same: the shim follows no link", func(t *testing.T, cd string) {
			check(t, "removing the root", os.Remove(root(cd)))
			check(t, "linking", os.Symlink(root(filepath.Join(filepath.Dir(cd), "uid-a")), root(cd)))
		}, true},
		{"root removed", "the same", func(t *testing.T, cd string) { check(t, "removing the root", os.Remove(root(cd))) }, true},
		{"root rewritten: every TPC, BE, no memory limit", "its processes run on every TPC, unlimited: the shim is in its own processes, which can unload it", func(t *testing.T, cd string) {
			rewriteRoot(t, root(cd), func(b *ctl.Block) {
				b.Mask, b.TenantClass, b.MemLimit = [4]uint32{}, ctl.ClassBE, 0
			})
			h, err := ctl.OpenPath(root(cd))
			check(t, "reading the rewritten root", err)
			s := h.Snapshot()
			h.Close()
			if s.Mask != (topo.Disable{}) || s.Class != ctl.ClassBE || s.Memory.Limit != 0 {
				t.Fatalf("the root was not rewritten: %+v", s)
			}
		}, false},
		{"a process's block of every TPC, its process running", "that process runs on every TPC", func(t *testing.T, cd string) {
			in := ctl.Init{PID: 7, Class: ctl.ClassLS, Parts: []ctl.Part{{Mask: [4]uint32{}, Live: top.Live()}}}
			h, err := ctl.Create(cd, in)
			check(t, "making the block", err)
			h.Close()
			// its shim holds the block's lock while the others are placed
			ctltest.HoldLock(t, h.Path)
			claims, _, err := ctl.Claims(filepath.Dir(filepath.Dir(cd)))
			check(t, "listing the claims", err)
			for _, c := range claims {
				if c.UID == "uid-b" && (len(c.Procs) != 1 || c.Procs[0].PID != 7 || c.Procs[0].Mask != [4]uint32{}) {
					t.Fatalf("the attacker's process is not listed as running on every TPC: %+v", c.Procs)
				}
			}
		}, false},
		{"its LS file: every entry busy, a heartbeat an hour ahead, timing now, seat 0 named", "it holds the GPU's BE tenants to their share while it runs, and for a lease after", func(t *testing.T, cd string) {
			f, err := os.OpenFile(filepath.Join(cd, ctl.LSLinkName(ctl.NodeName(top.UUID))), os.O_RDWR, 0)
			check(t, "opening its LS file", err)
			defer f.Close()
			mem, err := syscall.Mmap(int(f.Fd()), 0, ctl.LSSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
			check(t, "mapping its LS file", err)
			defer syscall.Munmap(mem)
			ls := (*ctl.LSFile)(unsafe.Pointer(&mem[0]))
			ls.Slot, ls.Busy, ls.BeatNS, ls.TimingNS = 0, ^uint32(0), 1<<62, 1<<62
			for i := range ls.Procs {
				ls.Procs[i] = ctl.LSProc{PID: 99, Busy: 1, BeatNS: 1 << 62, TimingNS: 1 << 62}
			}
		}, false},
		{"the node block, the GPU's directory and its BE file: carve's and read-only to it", "none: TestHostileOtherUID has another uid try; BE claims may write the BE file (LS tenants' alone histograms)", func(t *testing.T, cd string) {
			node := filepath.Join(cd, ctl.NodeName(top.UUID))
			for path, want := range map[string]os.FileMode{node: 0o644, node + ctl.NodeDirSuffix: os.ModeDir | 0o755} {
				if st, err := os.Stat(path); err != nil || st.Mode() != want {
					t.Fatalf("%s: %v %v, want mode %v", path, st.Mode(), err, want)
				}
			}
		}, false},
	} {
		t.Run(tc.attack, func(t *testing.T) {
			dirs := twins(t)
			cd, _ := ctl.ClaimDir(dirs[1], "uid-b")
			tc.do(t, cd)
			if h, err := ctl.OpenPath(root(cd)); tc.spoiled && err == nil {
				h.Close()
				t.Fatal("the attack left the root readable")
			} else if err == nil {
				h.Close()
			}
			want, got := others(t, dirs[0]), others(t, dirs[1])
			if got != want {
				t.Errorf("after %s (the attacker can still: %s), the others get\n%s\nwant\n%s", tc.attack, tc.self, got, want)
			}
		})
	}
}

// TestHostileNodeHeader: the node block is carve's: a pod, under another
// uid than carve-dra's, cannot write it (as root, the test tries as uid
// 65534), nor remove its link. A block spoiled anyway (left by another
// release: its version) stops LS and BE placements on the GPU, which say
// which block to remove, until an operator removes it; tenants without
// class, and the claims reserved, are as the twin's.
func TestHostileNodeHeader(t *testing.T) {
	top, _ := topologyJSON(t)
	dirs := twins(t)
	node := filepath.Join(dirs[1], ctl.ClaimsDir, "uid-b", ctl.NodeName(top.UUID))
	if os.Getuid() == 0 {
		for _, d := range []string{filepath.Dir(dirs[1]), dirs[1], filepath.Join(dirs[1], ctl.ClaimsDir)} {
			os.Chmod(d, 0o711) // as the pod's mount of its directory lets it through
		}
		for _, script := range []string{`printf x | dd of="$1" bs=1 seek=4 conv=notrunc`, `rm -f "$1"`, `: > "$1.d/x"`} {
			cmd := exec.Command("/bin/sh", "-c", script, "sh", node)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			if err := cmd.Run(); err == nil {
				t.Errorf("another uid ran %s on the node block %s", script, node)
			}
		}
		if got, want := others(t, dirs[1]), others(t, dirs[0]); got != want {
			t.Errorf("after another uid's attempts on the node block, the others get\n%s\nwant\n%s", got, want)
		}
		dirs = twins(t)
		node = filepath.Join(dirs[1], ctl.ClaimsDir, "uid-b", ctl.NodeName(top.UUID))
	}
	f, err := os.OpenFile(node, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{ctl.NodeVersion + 1}, 4)
	f.Close()
	if got := others(t, dirs[1]); !strings.Contains(got, "remove it") {
		t.Errorf("an LS placement beside a spoiled node block: %s", got)
	}
	for _, dir := range dirs {
		if _, err := Place(dir, top, Request{Claim: &Claim{UID: "uid-e", Name: "ns/e"}, Spec: count(t, "4")}); err != nil {
			t.Errorf("a claim without class beside a spoiled node block: %v", err)
		}
	}
}

// TestHostileOtherUID: a pod's process under another uid (a container's
// user) may write its own claim's root, and no more: not carve's records
// nor the runtime directory, where every other claim's directory is. It
// needs root, to run as another uid.
func TestHostileOtherUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs the attacker as another uid: needs root")
	}
	dirs := twins(t)
	cd, _ := ctl.ClaimDir(dirs[1], "uid-b")
	// as runs the shell command script with "$1" path as uid 65534
	as := func(script, path string) error {
		cmd := exec.Command("/bin/sh", "-c", script, "sh", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return cmd.Run()
	}
	const write, mkdir = `: >> "$1"`, `mkdir "$1"`
	// what the pod sees is its own directory (mounted): reach it as that
	for _, d := range []string{filepath.Dir(dirs[1]), dirs[1], filepath.Join(dirs[1], ctl.ClaimsDir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := as(write, filepath.Join(cd, ctl.ClaimRoot)); err != nil {
		t.Errorf("another uid of the claim's pod writing its root, its memory account: %v", err)
	}
	for _, c := range []struct{ script, path string }{
		{write, filepath.Join(dirs[1], ctl.ClaimRecords, "uid-b")},
		{write, filepath.Join(dirs[1], ctl.ClaimRecords, "uid-a")},
		{write, filepath.Join(dirs[1], ctl.ClaimRecords, "uid-new")},
		{write, filepath.Join(dirs[1], "x")},
		{mkdir, filepath.Join(dirs[1], ctl.ClaimsDir, "uid-new")},
	} {
		if err := as(c.script, c.path); err == nil {
			t.Errorf("another uid made or wrote %s", c.path)
		}
	}
	for _, path := range []string{filepath.Join(dirs[1], "x"), filepath.Join(dirs[1], ctl.ClaimsDir, "uid-new")} {
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s made: %v", path, err)
		}
	}
	if got, want := others(t, dirs[1]), others(t, dirs[0]); got != want {
		t.Errorf("after another uid's attempts, the others get\n%s\nwant\n%s", got, want)
	}
}
