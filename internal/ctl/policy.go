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
// Each field's tags name it where people write it (flag: carve run's flag,
// config: a claim config's field) and say which class it is for (for:
// "ls" or "be"); Normalize, its errors and RunArgs read them. A new field
// is the field, its tags and its rule in Normalize.
type Policy struct {
	Class uint32 // ClassNone, ClassLS or ClassBE
	// LS: keep to its own TPCs and borrow none, so that a BE beside it
	// (with Share 1) keeps the rest while it has work.
	Own bool `flag:"own" config:"own" for:"ls"`
	// BE: the share of the time it may still run while LS work is in
	// flight, off the LS tenants' TPCs (0: only after waiting an epoch).
	Share float64 `flag:"be-share" config:"beShare" for:"be"`
	// BE: the period Share is counted over (0: DefaultPolicy's).
	Epoch time.Duration `flag:"epoch" config:"epoch" for:"be"`
	// BE: kernels in flight at most (0: no bound).
	Inflight int `flag:"inflight" config:"inflight" for:"be"`
	// BE: GPU time in flight at most, by its kernels' measured time (0: no
	// bound).
	Queue time.Duration `flag:"queue" config:"queue" for:"be"`
	// BE: how many TPCs it keeps to while LS work is in flight, which LS
	// tenants keep off (0: none; then all but the busy LS tenants'). Which
	// TPCs they are is for placement to choose (Init.Floor).
	Floor int `flag:"be-floor" config:"beFloor" for:"be"`
	// BE: while an LS tenant is active on the GPU (it served a request in
	// the last NodeQuiet), a sliceable kernel whose measured time is over
	// this goes in pieces of about this long (whole waves of its blocks),
	// each through the BE's gate, so that an LS request waits for at most
	// one piece beyond the BE's Queue (0: never cut).
	Slice time.Duration `flag:"slice" config:"slice" for:"be"`
	// Any class: the GPU memory its processes may allocate together (zero:
	// no limit). A share of the GPU's memory is for placement to resolve
	// (Init.MemLimit).
	Mem MemLimit `flag:"mem" config:"memory"`
}

// SliceMin and SliceMax bound the pieces Policy.Slice may ask for: a
// piece costs a launch, and one longer than a second bounds nothing an
// LS request would notice.
const (
	SliceMin = 20 * time.Microsecond
	SliceMax = time.Second
)

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
	v, def := reflect.ValueOf(p).Elem(), reflect.ValueOf(DefaultPolicy)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		class := f.Tag.Get("for")
		if class == "" || class == ClassName(p.Class) {
			continue
		}
		if !v.Field(i).IsZero() && !v.Field(i).Equal(def.Field(i)) {
			return fail(f.Name, " is for %s tenants", strings.ToUpper(class))
		}
		v.Field(i).SetZero()
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
	case p.Mem.Percent < 0 || p.Mem.Percent > 100 || math.IsNaN(p.Mem.Percent) || p.Mem.Percent > 0 && p.Mem.Bytes > 0:
		return fail("Mem", ": memory limit of %d bytes and %g%%: want a size, or a share of the GPU's memory above 0%% and at most 100%%",
			p.Mem.Bytes, p.Mem.Percent)
	}
	return nil
}

// fieldName is Policy's field as spelled says.
func fieldName(field string, spelled Spelling) string {
	f, _ := reflect.TypeOf(Policy{}).FieldByName(field)
	switch name := f.Tag.Get(string(spelled)); {
	case spelled == FlagNames && name != "":
		return "--" + name
	case name != "":
		return name
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
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		flag, class := f.Tag.Get("flag"), f.Tag.Get("for")
		if flag == "" || class != "" && class != ClassName(p.Class) {
			continue
		}
		switch x := v.Field(i).Interface().(type) {
		case MemLimit:
			if x != (MemLimit{}) {
				args = append(args, "--"+flag+"="+x.String())
			}
		case bool:
			if x {
				args = append(args, "--"+flag)
			}
		case float64:
			args = append(args, "--"+flag+"="+strconv.FormatFloat(x, 'g', -1, 64))
		default: // ints and durations
			args = append(args, fmt.Sprintf("--%s=%v", flag, x))
		}
	}
	return args
}

// Apply writes p (normalized) into what a new block starts with: the
// class, the flag an LS tenant that keeps to its own TPCs sets, a BE
// tenant's tide policy, keeping in.Tide.Node, and a memory limit given in
// bytes. The floor's TPCs and a memory limit given as a share of the GPU
// are placement's to write (in.Floor, in.MemLimit).
func (p Policy) Apply(in *Init) {
	in.Class = p.Class
	if p.Own {
		in.Flags |= FlagLSOwn
	}
	in.Tide = Tide{Node: in.Tide.Node, InflightMax: p.Inflight, Queue: p.Queue, Share: p.Share, Epoch: p.Epoch,
		Slice: p.Slice}
	in.MemLimit = p.Mem.Bytes
}

// Policy is the policy the block was made with (Apply's, read back; a
// memory limit in bytes, as placement resolved it).
func (s Snapshot) Policy() Policy {
	return Policy{Class: s.Class, Own: s.Flags&FlagLSOwn != 0, Share: s.Tide.Share, Epoch: s.Tide.Epoch,
		Inflight: s.Tide.InflightMax, Queue: s.Tide.Queue, Slice: s.Tide.Slice, Floor: s.Floor.Count(), Mem: MemLimit{Bytes: s.Memory.Limit}}
}
