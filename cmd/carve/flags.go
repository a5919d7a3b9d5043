package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
)

// errUnnamed is parse's error where no partition is named.
var errUnnamed = errors.New("name a partition with one of -t, -g or -n")

// specFlags are the three ways to name a partition; exactly one is given.
type specFlags struct {
	tpcs, gpcs, count string
	share             bool
}

func (f *specFlags) add(c *cobra.Command) {
	c.Flags().StringVarP(&f.tpcs, "tpcs", "t", "", `logical TPCs, e.g. "0-15,20", or "all"`)
	c.Flags().StringVarP(&f.gpcs, "gpcs", "g", "", `whole GPCs, e.g. "2,3"`)
	c.Flags().StringVarP(&f.count, "count", "n", "", `a number of TPCs ("20") or a share ("50%"), placed GPC-packed on free TPCs`)
	c.Flags().BoolVar(&f.share, "share", false, "allow TPCs that other partitions hold (they are then time-shared)")
}

func (f *specFlags) parse() (partition.Spec, error) {
	given := 0
	for _, s := range []string{f.tpcs, f.gpcs, f.count} {
		if s != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return partition.Spec{}, errUnnamed
	case given > 1:
		return partition.Spec{}, errors.New("-t, -g and -n exclude each other: give one")
	case f.tpcs != "":
		return partition.ParseTPCs(f.tpcs)
	case f.gpcs != "":
		return partition.ParseGPCs(f.gpcs)
	}
	return partition.ParseCount(f.count)
}

// tideFlags are run's LS and BE classes and the tenant's policy.
type tideFlags struct {
	ls, be bool
	p      ctl.Policy
}

func (f *tideFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.ls, "ls", false, "latency-sensitive: holds its TPCs, borrows free ones, and holds BE tenants back while it has work on the GPU")
	c.Flags().BoolVar(&f.p.Own, "own", false, "LS: keep to its own TPCs and borrow none, so that BE tenants beside it (--be-share 1) keep the rest while it has work")
	c.Flags().BoolVar(&f.be, "be", false, "best-effort: runs on what LS tenants leave, held back while they have work on the GPU (partition default: all TPCs)")
	d := ctl.DefaultPolicy
	c.Flags().IntVar(&f.p.Inflight, "inflight", d.Inflight, "BE: kernels in flight at most, so that holding it back takes effect within a few kernels (0: no bound)")
	c.Flags().DurationVar(&f.p.Queue, "queue", d.Queue, "BE: GPU time in flight at most, by its kernels' measured time (0: no bound)")
	c.Flags().Float64Var(&f.p.Share, "be-share", d.Share, "BE: share of the time it may still run while LS work is in flight, off the LS tenants' TPCs (0: only after waiting an epoch)")
	c.Flags().DurationVar(&f.p.Epoch, "epoch", d.Epoch, "BE: the period --be-share is counted over")
	c.Flags().IntVar(&f.p.Floor, "be-floor", d.Floor, "BE: TPCs it keeps to while LS work is in flight, which LS tenants keep off (0: all but the busy LS tenants'); with --be-share 1 it runs there all the while, its memory traffic bounded by its TPCs")
	c.Flags().DurationVar(&f.p.Slice, "slice", d.Slice, "BE: while an LS tenant is active on the GPU, kernels measured longer than this go in pieces this long, each held back on its own, so that an LS request waits for at most one piece beyond the BE's --queue (0: never cut; e.g. 200us)")
	c.Flags().Var(&f.p.Mem, "mem", memUsage)
}

// memUsage is what --mem takes, for run and set.
const memUsage = `GPU memory its processes may allocate together: a size (12G, 512M, 12GiB, bytes; powers of 1024) ` +
	`or a share of the GPU's (60%); the limits of the GPU's tenants must fit its memory (--share over-commits it)`

// policy is the tenant's policy, checked.
func (f *tideFlags) policy() (ctl.Policy, error) {
	p := f.p
	switch {
	case f.ls && f.be:
		return p, errors.New("--ls and --be exclude each other")
	case f.ls:
		p.Class = ctl.ClassLS
	case f.be:
		p.Class = ctl.ClassBE
	}
	return p, p.Normalize(ctl.FlagNames)
}

// unnamed is baseErr where a GPU of the --device values would take the
// partition -t, -g and -n name, and they name none (or the values' error),
// so that it is said before anything is looked up.
func unnamed(values []string, baseErr error) error {
	named, all, err := partition.ParseDevices(values)
	if err != nil || baseErr == nil {
		return err
	}
	for _, g := range named {
		if g.Spec == nil {
			return baseErr
		}
	}
	if all {
		return baseErr
	}
	return nil
}

// gpus are the GPUs run's --device values name, each with its topology
// and its partition: its own where the value gives one, else base (or
// baseErr, where -t, -g and -n name none), and their ordinals.
func gpus(values []string, base partition.Spec, baseErr error) ([]place.On, []int, error) {
	named, all, err := partition.ParseDevices(values)
	if err != nil {
		return nil, nil, err
	}
	if all {
		n, err := discover.Count()
		if err != nil {
			return nil, nil, err
		}
		for i := range n {
			named = append(named, partition.GPU{Ordinal: i})
		}
	}
	var on []place.On
	var ords []int
	for _, g := range named {
		spec := base
		if g.Spec != nil {
			spec = *g.Spec
		} else if baseErr != nil {
			return nil, nil, baseErr
		}
		t, _, err := discover.Topology(g.Ordinal, false)
		if err != nil {
			if len(named) > 1 {
				err = fmt.Errorf("GPU %d: %w", g.Ordinal, err)
			}
			return nil, nil, err
		}
		on = append(on, place.On{Topo: t, Spec: spec, Name: fmt.Sprintf("GPU %d", g.Ordinal)})
		ords = append(ords, g.Ordinal)
	}
	return on, ords, nil
}

// placedText says where a tenant was placed: its TPCs, on each of its GPUs
// where it has several; a tenant on one GPU other than GPU 0, the default,
// is told which.
func placedText(p *place.Placed, on []place.On, ords []int) string {
	if len(on) == 1 {
		text := fmt.Sprintf("TPCs %s (%d of %d)", p.Set, len(p.Set), len(on[0].Topo.TPCs))
		if ords[0] != 0 {
			text = fmt.Sprintf("GPU %d %s", ords[0], text)
		}
		return text
	}
	sets := []partition.Set{p.Set}
	for _, m := range p.More {
		sets = append(sets, m.Set)
	}
	var each []string
	for i, g := range on {
		each = append(each, fmt.Sprintf("GPU %d TPCs %s (%d of %d)", ords[i], sets[i], len(sets[i]), len(g.Topo.TPCs)))
	}
	return strings.Join(each, ", ")
}
