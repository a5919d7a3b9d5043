// The flags carve run and carve set share: the three ways of naming a
// partition (-t, -g, -n), the tide classes and the tenant's policy (one
// flag per field of ctl.Policy), the GPUs --device names, and the line
// saying where a tenant was placed.

package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	c.Flags().BoolVar(&f.be, "be", false, "best-effort: runs on what LS tenants leave, held back while they have work on the GPU (partition default: all TPCs)")
	for _, field := range ctl.PolicyFields() {
		if field.Flag != "" {
			policyFlag(c.Flags(), field, &f.p)
		}
	}
}

// policyFlag binds field's flag to its field of p, with DefaultPolicy's
// value as its default and its help tag, after the class it is for.
func policyFlag(flags *pflag.FlagSet, field ctl.PolicyField, p *ctl.Policy) {
	help := field.Help
	if field.For != "" {
		help = strings.ToUpper(field.For) + ": " + help
	}
	def := field.Value(ctl.DefaultPolicy)
	switch v := field.Addr(p).(type) {
	case *bool:
		flags.BoolVar(v, field.Flag, def.(bool), help)
	case *int:
		flags.IntVar(v, field.Flag, def.(int), help)
	case *float64:
		flags.Float64Var(v, field.Flag, def.(float64), help)
	case *string:
		flags.StringVar(v, field.Flag, def.(string), help)
	case *time.Duration:
		flags.DurationVar(v, field.Flag, def.(time.Duration), help)
	case *ctl.MemLimit: // a pflag.Value
		*v = def.(ctl.MemLimit)
		flags.Var(v, field.Flag, help)
	case *ctl.SLO: // a pflag.Value
		*v = def.(ctl.SLO)
		flags.Var(v, field.Flag, help)
	default:
		panic(fmt.Sprintf("ctl.Policy.%s: carve run has no flag for a %T", field.Name, v))
	}
}

// memUsage is what --mem takes, for run and set.
var memUsage = ctl.PolicyFieldNamed("Mem").Help

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
