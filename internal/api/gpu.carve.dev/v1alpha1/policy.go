// The policy fields of a ClaimConfig: ctl.Policy's fields that have a
// config tag, found by reflection, with the JSON each takes.

package v1alpha1

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carve-gpu/carve/internal/ctl"
)

// Policy is what a config sets of the tenant's policy: for each field of
// ctl.Policy with a config tag that the config names, by that name, its
// value as ctl.Policy holds it (a bool, an int, a float64, a
// time.Duration), except a memory limit (ctl.MemLimit) and an SLO
// (ctl.SLO), which are the text written ("12G", "25%"; "8ms", "2x"), for
// Resolve to parse.
type Policy map[string]any

// policyField is a field of ctl.Policy that a config may set.
type policyField struct {
	name  string          // its config tag, the config's JSON field
	field ctl.PolicyField // in ctl.Policy
	typ   reflect.Type    // in ctl.Policy
	value reflect.Type    // of its value in Policy
	json  reflect.Type    // of the JSON it is written as
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	memLimitType = reflect.TypeFor[ctl.MemLimit]()
	sloType      = reflect.TypeFor[ctl.SLO]()
)

// policyFields are ctl.Policy's fields that have a config tag, in its
// order.
var policyFields = findPolicyFields()

func findPolicyFields() []policyField {
	var out []policyField
	for _, f := range ctl.PolicyFields() {
		name := f.Config
		if name == "" {
			continue
		}
		typ := reflect.TypeOf(f.Value(ctl.Policy{}))
		pf := policyField{name: name, field: f, typ: typ, value: typ, json: typ}
		switch {
		case typ == memLimitType || typ == sloType: // parsed by Resolve, as ctl.ParseMemLimit and ctl.ParseSLO read them
			pf.value, pf.json = reflect.TypeFor[string](), reflect.TypeFor[string]()
		case typ == durationType: // a Go duration string, as metav1.Duration writes it
			pf.json = reflect.TypeFor[metav1.Duration]()
		case typ.Kind() == reflect.Bool || typ.Kind() == reflect.Int || typ.Kind() == reflect.Float64 || typ.Kind() == reflect.String:
		default:
			panic(fmt.Sprintf("ctl.Policy.%s (config %q) is a %s: a claim config has no JSON for it (add it to %s)",
				f.Name, name, typ, "internal/api/gpu.carve.dev/v1alpha1/policy.go"))
		}
		out = append(out, pf)
	}
	return out
}

// fromJSON is the value of f in Policy from its decoded JSON, v.
func (f policyField) fromJSON(v reflect.Value) any {
	if f.json == reflect.TypeFor[metav1.Duration]() {
		return v.Interface().(metav1.Duration).Duration
	}
	return v.Convert(f.value).Interface()
}

// toJSON is f's value in Policy, x, as its JSON's type.
func (f policyField) toJSON(x any) (reflect.Value, error) {
	v := reflect.ValueOf(x)
	if !v.IsValid() || v.Type() != f.value {
		return reflect.Value{}, fmt.Errorf("%s: a %T, want a %s", f.name, x, f.value)
	}
	if f.json == reflect.TypeFor[metav1.Duration]() {
		return reflect.ValueOf(metav1.Duration{Duration: time.Duration(v.Int())}), nil
	}
	return v.Convert(f.json), nil
}

// apply sets the fields of dst that p names; a memory limit that does not
// parse is an error that names its field.
func (p Policy) apply(dst *ctl.Policy) error {
	for _, f := range policyFields {
		x, ok := p[f.name]
		if !ok {
			continue
		}
		v := reflect.ValueOf(x)
		if !v.IsValid() || v.Type() != f.value {
			return fmt.Errorf("%s: a %T, want a %s", f.name, x, f.value)
		}
		if f.typ == memLimitType {
			m, err := ctl.ParseMemLimit(v.String())
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			v = reflect.ValueOf(m)
		}
		if f.typ == sloType {
			s, err := ctl.ParseSLO(v.String())
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			v = reflect.ValueOf(s)
		}
		reflect.ValueOf(f.field.Addr(dst)).Elem().Set(v.Convert(f.typ))
	}
	for name := range p {
		if !slices.ContainsFunc(policyFields, func(f policyField) bool { return f.name == name }) {
			return fmt.Errorf("%s: not a field of a claim config's policy", name)
		}
	}
	return nil
}
