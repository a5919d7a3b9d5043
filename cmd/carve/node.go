// carve node init: root makes the node directory, the one runtime
// directory of every user of the node.

package main

import (
	"fmt"
	"os/user"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
)

func newNodeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "Set up the node for several users (carve node init)",
	}
	c.AddCommand(newNodeInitCmd())
	return c
}

func newNodeInitCmd() *cobra.Command {
	var group, dir string
	c := &cobra.Command{
		Use:   "init [--group NAME] [--dir PATH]",
		Short: "Make the node directory, where every user's tenants see each other (as root)",
		Long: `init makes the node directory (` + ctl.NodeDirDefault + `, or --dir, or
$CARVE_NODE_DIR): one runtime directory for the control blocks of every
user of the node. Without it each user's carve keeps its blocks in a
directory of its own (/dev/shm/carve-UID), so that tenants of different
users are placed on the same TPCs and never meet in tide. Where it
exists, every user's carve uses it (unless CARVE_RUNTIME_DIR names
another directory). Where carve-dra is given it (the chart's
plugin.nodeDir), it publishes each claim it prepares here
(` + ctl.PublishedDir + `/UID): every user's placement keeps off a claim's TPCs
and counts its memory limit, carve ls lists it, and a claim's prepare
keeps off the tenants placed here. carve-dra's own runtime directory
(/run/carve) stays root's alone.

It is owned by root, mode 1777: anyone may make files in it, and the
sticky bit lets only a file's owner (and root) remove or rename it. With
--group NAME it is mode 1770 of that group: only its users may use carve
on the node. It must be made by root: carve refuses a node directory
that is not root's, a link, or one without the sticky bit, rather than
fall back to a directory of the user's own (a user who made it first
would otherwise split the node's view), and says how to fix it.

The trust model, in the node directory:
  - a tenant's control block is its user's, mode 0644: every user reads
    it (placement, carve ls, memory sums and tide see all tenants), only
    that user and root change it: carve set on another user's tenant is
    refused, naming its owner;
  - the blocks of tenants that ended are removed by their user's next
    carve, or by root's carve daemon; until then they hold no TPCs;
  - a GPU's node block (tide) is root's, mode 0644: root's carve daemon
    alone makes and writes it and seats every user's LS tenants, so run
    'sudo carve daemon' on the node; it first records each tenant of
    carve run (its class and SLO, as carve made it: root's, mode 0644, in
    .tenants, root's, mode 0755), and seating and the SLO controller
    believe the record, not what the tenant's blocks say later (a user's
    carve run --ls or --be waits up to 3s for its record and seat, else
    warns); shims map it read-only; each LS
    tenant's LS file is its user's, mode 0644, which BE tenants of every
    user read, and so is each user's BE file, where its BE tenants stamp
    their launches for every user's LS tenants to read;
    carve's lease bounds what a dead LS tenant leaves;
  - the placement lock is root's file, mode 0644, which every user locks:
    a user can hold it (as any carve does while it places), not change it;
    carve refuses a lock of another user's, and makes none for a user
    where it is missing (root's carve makes it): run init again;
  - the claims carve-dra publishes are root's, mode 0644, in a directory
    of root's, mode 0755, which init makes: a user can neither make nor
    change one, and carve honours no other (a file not root's, a link or
    one it cannot read is skipped and reported by carve ls).
A user can still place partitions that take TPCs from others (as on one
user's node), and, with a block of its own, claim the pid of a process it
expects another user to start, whose carve run then fails. Tide stays
apart from the claims', so no partition here is placed to share a
claim's TPCs or memory (a BE one of every TPC is given those no claim
holds; --share onto a claim is refused), and a BE tenant here, which
yields only to LS tenants here, keeps every claim off all of its TPCs.`,
		Args: cobra.ExactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = ctl.NodeDir()
			}
			gid := -1
			if group != "" {
				g, err := user.LookupGroup(group)
				if err != nil {
					return fmt.Errorf("--group %s: %w", group, err)
				}
				if gid, err = strconv.Atoi(g.Gid); err != nil {
					return fmt.Errorf("--group %s: gid %q", group, g.Gid)
				}
			}
			if err := ctl.InitNodeDir(dir, gid); err != nil {
				return err
			}
			who := "every user"
			if gid >= 0 {
				who = "the users of group " + group
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node directory %s: carve of %s uses it", dir, who)
			if dir != ctl.NodeDirDefault {
				fmt.Fprintf(cmd.OutOrStdout(), " with CARVE_NODE_DIR=%s", dir)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			fmt.Fprintln(cmd.OutOrStdout(), "run 'sudo carve daemon' on the node too: it seats every user's LS tenants there")
			return nil
		},
	}
	c.Flags().StringVar(&group, "group", "", "only this group's users may use it (mode 1770 root:GROUP; default: everyone, mode 1777)")
	c.Flags().StringVar(&dir, "dir", "", "where to make it (default: $CARVE_NODE_DIR, else "+ctl.NodeDirDefault+")")
	return c
}
