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
// time.Duration), except a memory limit (ctl.MemLimit), which is the text
// written ("12G", "25%"), for Resolve to parse.
type Policy map[string]any

// policyField is a field of ctl.Policy that a config may set.
type policyField struct {
	name  string       // its config tag, the config's JSON field
	index int          // in ctl.Policy
	typ   reflect.Type // in ctl.Policy
	value reflect.Type // of its value in Policy
	json  reflect.Type // of the JSON it is written as
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	memLimitType = reflect.TypeFor[ctl.MemLimit]()
)

// policyFields are ctl.Policy's fields that have a config tag, in its
// order.
var policyFields = findPolicyFields()

func findPolicyFields() []policyField {
	var out []policyField
	t := reflect.TypeFor[ctl.Policy]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get(string(ctl.ConfigNames))
		if name == "" {
			continue
		}
		pf := policyField{name: name, index: i, typ: f.Type, value: f.Type, json: f.Type}
		switch {
		case f.Type == memLimitType: // parsed by Resolve, as ctl.ParseMemLimit reads it
			pf.value, pf.json = reflect.TypeFor[string](), reflect.TypeFor[string]()
		case f.Type == durationType: // a Go duration string, as metav1.Duration writes it
			pf.json = reflect.TypeFor[metav1.Duration]()
		case f.Type.Kind() == reflect.Bool || f.Type.Kind() == reflect.Int || f.Type.Kind() == reflect.Float64:
		default:
			panic(fmt.Sprintf("ctl.Policy.%s (config %q) is a %s: a claim config has no JSON for it (add it to %s)",
				f.Name, name, f.Type, "internal/api/gpu.carve.dev/v1alpha1/policy.go"))
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
	out := reflect.ValueOf(dst).Elem()
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
		out.Field(f.index).Set(v.Convert(f.typ))
	}
	for name := range p {
		if !slices.ContainsFunc(policyFields, func(f policyField) bool { return f.name == name }) {
			return fmt.Errorf("%s: not a field of a claim config's policy", name)
		}
	}
	return nil
}
