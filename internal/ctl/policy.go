// A tenant's policy beyond its TPCs (Policy): its class and tide
// settings, their rules, how they are spelled on the command line and in
// a claim's config, and how they go into a control block and back.

package ctl

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/topo"
)

// Policy is what a tenant asks of carve beyond its TPCs: its class and,
// for its class, how tide treats it. carve run's flags, a claim's config
// and bench serve's tide settings each make one, and Normalize holds every
// rule they share; Apply is how it goes into a control block.
//
// A field is written once, here: its tags name it where people write it
// (flag: carve run's flag, config: a claim config's field), say which
// class it is for (for: "ls" or "be") and what carve run --help says of it
// (help). carve run's flags, claim configs, Normalize's errors and RunArgs
// are made from the tags (PolicyFields); a new field is the field, its
// tags, its rule in Normalize and its place in the block (Apply, and
// Snapshot.Policy), and the tests of each name a field that one lacks.
type Policy struct {
	Class uint32 // ClassNone, ClassLS or ClassBE
	// LS: keep to its own TPCs and borrow none.
	Own bool `flag:"own" config:"own" for:"ls" help:"keep to its own TPCs and borrow none, so that BE tenants beside it (--be-share 1) keep the rest while it has work"`
	// LS: the bound on its requests' p99 as carve daemon's SLO controller
	// (internal/slo) estimates it from its busy periods and busy time (its
	// marked requests, with Mark), which it keeps by holding the GPU's BE tenants back, giving them the
	// rest (zero: none).
	SLO SLO `flag:"slo" config:"slo" for:"ls" help:"the bound on its requests' p99, queueing included, as carve daemon estimates it from its busy periods and busy time (its marked requests, with --mark): a time (8ms) or a multiple of that estimate while no BE ran (2x); carve daemon then sets the BE tenants' share and queue on its GPUs to keep it, and gives them the rest (default: none)"`
	// LS: the NVTX range its program marks each request with (MarkMax
	// bytes of printable ASCII; a trailing '*' matches any message that
	// begins with what precedes it): the shim times each (shim/nvtx.c),
	// carve ls, top and the metrics show them beside its busy periods,
	// and the SLO controller judges it by them instead ("": none).
	Mark string `flag:"mark" config:"mark" for:"ls" help:"the NVTX range its program marks each request with (request, or req* for any message that begins with req): carve times each from its push or start to its pop or end, shows their p50/p99 in carve ls, top and the metrics beside its busy periods, and with --slo judges it by them instead (busy periods merge queued requests); the tool that takes NVTX's ranges is carve's then, not a profiler's (default: none)"`
	// BE: the share of the time it may still run while LS work is in
	// flight, off the LS tenants' TPCs (0: only after waiting an epoch).
	Share float64 `flag:"be-share" config:"beShare" for:"be" help:"share of the time it may still run while LS work is in flight, off the LS tenants' TPCs (0: only after waiting an epoch)"`
	// BE: the period Share is counted over (0: DefaultPolicy's).
	Epoch time.Duration `flag:"epoch" config:"epoch" for:"be" help:"the period --be-share is counted over"`
	// BE: kernels in flight at most (0: no bound).
	Inflight int `flag:"inflight" config:"inflight" for:"be" help:"kernels in flight at most, so that holding it back takes effect within a few kernels (0: no bound)"`
	// BE: GPU time in flight at most, by its kernels' measured time (0: no
	// bound).
	Queue time.Duration `flag:"queue" config:"queue" for:"be" help:"GPU time in flight at most, by its kernels' measured time (0: no bound)"`
	// BE: how many TPCs it keeps to while LS work is in flight, which LS
	// tenants keep off (0: none; then all but the busy LS tenants'). Which
	// TPCs they are is for placement to choose (Part.Floor).
	Floor int `flag:"be-floor" config:"beFloor" for:"be" help:"TPCs it keeps to while LS work is in flight, which LS tenants keep off (0: all but the busy LS tenants'); with --be-share 1 it runs there all the while, its memory traffic bounded by its TPCs"`
	// BE: while an LS tenant is active on the GPU (it served a request in
	// the last NodeQuiet), a sliceable kernel whose measured time is over
	// this goes in pieces of about this long (whole waves of its blocks),
	// each through the BE's gate, so that an LS request waits for at most
	// one piece beyond the BE's Queue (0: never cut).
	Slice time.Duration `flag:"slice" config:"slice" for:"be" help:"while an LS tenant is active on the GPU, kernels measured longer than this go in pieces this long, each held back on its own, so that an LS request waits for at most one piece beyond the BE's --queue (0: never cut; e.g. 200us)"`
	// Any class: the GPU memory its processes may allocate together (zero:
	// no limit). A share of the GPU's memory is for placement to resolve
	// (Place resolves it into bytes before Apply).
	Mem MemLimit `flag:"mem" config:"memory" help:"GPU memory its processes may allocate together: a size (12G, 512M, 12GiB, bytes; powers of 1024) or a share of the GPU's (60%); the limits of the GPU's tenants must fit its memory (--share over-commits it)"`
	// Any class: the share of the GPU's DRAM bandwidth it is guaranteed
	// while it wants it, as a slot of that share of each epoch (BWEpoch)
	// that its launches keep to, apart from the slots of the GPU's other
	// tenants with a share (whose shares must add up to 1 at most); zero:
	// none. Outside its slot it runs while no such tenant wants its own,
	// unless BWStrict.
	BW float64 `flag:"bw" config:"bandwidth" help:"share of the GPU's memory bandwidth it is guaranteed while it wants it (0.5): its kernels run in a slot of that share of each 2 ms, apart from the slots of the GPU's other tenants with a share, and outside it while none of them wants its own (the shares on a GPU add up to 1 at most; default: none)"`
	// Any class, with BW: never outside its slot, wanted or not, so that
	// its bandwidth, and its neighbours', is the same whoever runs.
	BWStrict bool `flag:"bw-strict" config:"bandwidthStrict" help:"with --bw: never run outside its slot, so that its speed does not depend on what its neighbours run (a memory-bound tenant alone then takes about 1/share as long)"`
	// Any class: the path of its program's kernel table (KernelTable):
	// the shim counts its launches' DRAM bytes by it, and a BE tenant's
	// kernels it calls compute-bound run beside busy LS work, held by no
	// share ("": none).
	Kernels string `flag:"kernels" config:"kernels" help:"its program's kernel table (carve profile --table): its launches' DRAM bytes are counted by it, and a BE tenant's kernels under 30% of the DRAM peak run beside busy LS work, held by no share (default: none)"`
}

// PolicyField is a field of Policy as its tags describe it.
type PolicyField struct {
	Name   string // the Go field, e.g. "Floor"
	Flag   string // carve run's flag, without its dashes ("" for none)
	Config string // a claim config's field ("" for none)
	For    string // the class it is for: "ls", "be", or "" for any
	Help   string // what carve run --help says of it
	index  int
}

// PolicyFields are Policy's fields that people write (all but Class), in
// their order.
func PolicyFields() []PolicyField {
	t := reflect.TypeFor[Policy]()
	var out []PolicyField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "Class" {
			continue
		}
		out = append(out, PolicyField{Name: f.Name, Flag: f.Tag.Get("flag"), Config: f.Tag.Get("config"),
			For: f.Tag.Get("for"), Help: f.Tag.Get("help"), index: i})
	}
	return out
}

// PolicyFieldNamed is the field of Policy named name (Go's name); it
// panics where there is none, a mistake in carve's own code.
func PolicyFieldNamed(name string) PolicyField {
	for _, f := range PolicyFields() {
		if f.Name == name {
			return f
		}
	}
	panic("ctl.Policy has no field " + name)
}

// Addr is a pointer to f's field of p: *bool, *int, *float64, *string,
// *time.Duration, *MemLimit or *SLO.
func (f PolicyField) Addr(p *Policy) any {
	return reflect.ValueOf(p).Elem().Field(f.index).Addr().Interface()
}

// Value is f's field of p.
func (f PolicyField) Value(p Policy) any { return reflect.ValueOf(p).Field(f.index).Interface() }

// SliceMin and SliceMax bound the pieces Policy.Slice may ask for: a
// piece costs a launch, and one longer than a second bounds nothing an
// LS request would notice.
const (
	SliceMin = 20 * time.Microsecond
	SliceMax = time.Second
)

// BWSlotMin is the shortest bandwidth slot (Policy.BW of BWEpoch): a
// slot holds a launch's kernel, and the gate's wait is a nap of 20 us.
const BWSlotMin = 20 * time.Microsecond

// DefaultPolicy holds the values a BE tenant's policy has unless told
// otherwise (its class is none).
var DefaultPolicy = Policy{Share: 0.05, Epoch: 10 * time.Millisecond, Inflight: 8, Queue: 300 * time.Microsecond}

// Spelling is how Normalize's errors name a field: as the tag of that name
// spells it, or in lower case.
type Spelling string

const (
	FieldNames  Spelling = ""       // "share", "floor"
	FlagNames   Spelling = "flag"   // carve run's: "--be-share", "--be-floor"
	ConfigNames Spelling = "config" // a claim config's: "beShare", "beFloor"
)

// PolicyError is a field of a policy that Normalize refused, and why.
type PolicyError struct {
	Field string // the field of Policy, e.g. "Floor"
	Why   string // what follows the field's name in Error
	name  string
}

func (e *PolicyError) Error() string { return e.name + e.Why }

// Normalize checks p and fills in its defaults: a field for another class
// than p's is an error unless it is zero or DefaultPolicy's (then it is
// cleared, so that a flag's default or a default config says nothing of an
// LS tenant), a BE's zero Epoch is DefaultPolicy's, and each value must be
// in its range. Errors name fields as spelled says.
func (p *Policy) Normalize(spelled Spelling) error {
	fail := func(field, why string, args ...any) error {
		return &PolicyError{Field: field, Why: fmt.Sprintf(why, args...), name: fieldName(field, spelled)}
	}
	if p.Class != ClassNone && p.Class != ClassLS && p.Class != ClassBE {
		return fail("Class", " %d: want ClassNone, ClassLS or ClassBE", p.Class)
	}
	for _, f := range PolicyFields() {
		if f.For == "" || f.For == ClassName(p.Class) {
			continue
		}
		v := reflect.ValueOf(f.Addr(p)).Elem()
		if !v.IsZero() && v.Interface() != f.Value(DefaultPolicy) {
			return fail(f.Name, " is for %s tenants", strings.ToUpper(f.For))
		}
		v.SetZero()
	}
	if p.Class == ClassBE && p.Epoch == 0 {
		p.Epoch = DefaultPolicy.Epoch
	}
	switch {
	case p.Share < 0 || p.Share > 1 || math.IsNaN(p.Share):
		return fail("Share", ": BE share %g: want a fraction from 0 to 1", p.Share)
	case p.Class == ClassBE && (p.Epoch < time.Millisecond || p.Epoch > time.Hour):
		return fail("Epoch", ": epoch %v: want 1ms to an hour", p.Epoch)
	case p.Inflight < 0 || p.Inflight > 1<<20:
		return fail("Inflight", ": kernels in flight %d: want 0 (no bound) to %d", p.Inflight, 1<<20)
	case p.Queue < 0 || p.Queue > time.Hour:
		return fail("Queue", ": queue %v: want 0 (no bound) to an hour", p.Queue)
	case p.Slice != 0 && (p.Slice < SliceMin || p.Slice > SliceMax):
		return fail("Slice", ": pieces of %v: want 0 (never cut) or %v to %v (a piece costs a launch)", p.Slice, SliceMin, SliceMax)
	case p.Floor < 0 || p.Floor > topo.MaskBits:
		return fail("Floor", ": floor %d TPCs: want 0 (none) to the GPU's TPCs", p.Floor)
	case p.Floor > 0 && p.Floor < NarrowMin:
		return fail("Floor", ": a BE floor of %d TPCs: want at least %d (kernels sized for the whole GPU may never finish on fewer)",
			p.Floor, NarrowMin)
	case p.BW < 0 || p.BW > 1 || math.IsNaN(p.BW):
		return fail("BW", ": bandwidth share %g: want a fraction above 0 and at most 1 (0: none)", p.BW)
	case p.BW > 0 && BWSlot(p.BW, BWEpoch) < BWSlotMin:
		return fail("BW", ": bandwidth share %g: a slot of %v of each %v; want at least %v", p.BW, BWSlot(p.BW, BWEpoch), BWEpoch, BWSlotMin)
	case p.BWStrict && p.BW == 0:
		return fail("BWStrict", ": a strict bandwidth share needs a share (--bw)")
	case checkKernelsPath(p.Kernels) != nil:
		return fail("Kernels", ": %v", checkKernelsPath(p.Kernels))
	case p.SLO.check() != nil:
		return fail("SLO", ": %v", p.SLO.check())
	case checkMark(p.Mark) != nil:
		return fail("Mark", ": %v", checkMark(p.Mark))
	case p.Mem.Percent < 0 || p.Mem.Percent > 100 || math.IsNaN(p.Mem.Percent) || p.Mem.Percent > 0 && p.Mem.Bytes > 0:
		return fail("Mem", ": memory limit of %d bytes and %g%%: want a size, or a share of the GPU's memory above 0%% and at most 100%%",
			p.Mem.Bytes, p.Mem.Percent)
	}
	p.SLO = p.SLO.rounded()
	return nil
}

// MarkMax is the longest Policy.Mark: the block's mark field, less its NUL.
const MarkMax = 63

// checkMark says why m will not do as an NVTX range to time; nil where it
// will, or is none.
func checkMark(m string) error {
	switch {
	case len(m) > MarkMax:
		return fmt.Errorf("NVTX range %q: %d bytes, want at most %d", m, len(m), MarkMax)
	case strings.IndexFunc(m, func(r rune) bool { return r < ' ' || r > '~' }) >= 0:
		return fmt.Errorf("NVTX range %q: want printable ASCII", m)
	case strings.Contains(strings.TrimSuffix(m, "*"), "*"):
		return fmt.Errorf("NVTX range %q: a '*' only at its end (any message that begins with what precedes it)", m)
	}
	return nil
}

// fieldName is Policy's field as spelled says.
func fieldName(field string, spelled Spelling) string {
	if field != "Class" {
		f := PolicyFieldNamed(field)
		switch {
		case spelled == FlagNames && f.Flag != "":
			return "--" + f.Flag
		case spelled == ConfigNames && f.Config != "":
			return f.Config
		}
	}
	return strings.ToLower(field)
}

// RunArgs are the flags of carve run that give a tenant p (normalized):
// its class, then each field for its class or for any.
func (p Policy) RunArgs() []string {
	var args []string
	if p.Class != ClassNone {
		args = append(args, "--"+ClassName(p.Class))
	}
	for _, f := range PolicyFields() {
		if f.Flag == "" || f.For != "" && f.For != ClassName(p.Class) {
			continue
		}
		switch x := f.Value(p).(type) {
		case MemLimit:
			if x != (MemLimit{}) {
				args = append(args, "--"+f.Flag+"="+x.String())
			}
		case SLO:
			if x != (SLO{}) {
				args = append(args, "--"+f.Flag+"="+x.String())
			}
		case string:
			if x != "" {
				args = append(args, "--"+f.Flag+"="+x)
			}
		case bool:
			if x {
				args = append(args, "--"+f.Flag)
			}
		case float64:
			if x == 0 && f.Value(DefaultPolicy) == 0.0 { // none, as by default
				continue
			}
			args = append(args, "--"+f.Flag+"="+strconv.FormatFloat(x, 'g', -1, 64))
		default: // ints and durations
			args = append(args, fmt.Sprintf("--%s=%v", f.Flag, x))
		}
	}
	return args
}

// Apply writes p (normalized, its memory limit resolved into bytes) into
// what a new block starts with: the class, the flag an LS tenant that
// keeps to its own TPCs sets, an LS tenant's SLO, a BE tenant's tide
// policy and the memory limit. The floor's TPCs are placement's to choose (Part.Floor).
func (p Policy) Apply(in *Init) {
	in.Class = p.Class
	if p.Own {
		in.Flags |= FlagLSOwn
	}
	in.Tide = Tide{InflightMax: p.Inflight, Queue: p.Queue, Share: p.Share, Epoch: p.Epoch, Slice: p.Slice, SLO: p.SLO, Mark: p.Mark}
	in.MemLimit = p.Mem.Bytes
	in.BW = BW{Share: p.BW, Strict: p.BWStrict}
	in.Kernels.Path = p.Kernels
}

// Policy is the policy the block was made with (Apply's, read back; a
// memory limit in bytes, as placement resolved it; a BE's share and queue
// as it asked them where the SLO controller holds them: Steered).
func (s Snapshot) Policy() Policy {
	share, queue := s.Tide.Share, s.Tide.Queue
	if s.Steered != nil {
		share, queue = s.Steered.Share, s.Steered.Queue
	}
	return Policy{Class: s.Class, Own: s.Flags&FlagLSOwn != 0, SLO: s.Tide.SLO, Mark: s.Tide.Mark, Share: share, Epoch: s.Tide.Epoch,
		Inflight: s.Tide.InflightMax, Queue: queue, Slice: s.Tide.Slice, Floor: s.Floor.Count(), Mem: MemLimit{Bytes: s.Memory.Limit},
		BW: s.BW.Share, BWStrict: s.BW.Strict, Kernels: s.Kernels}
}
