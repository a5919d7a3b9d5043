// ClaimConfig's JSON (ParseConfig, strict; MarshalJSON), and Resolve, its
// defaults and checks.

package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
)

// wireType is ClaimConfig as JSON decodes it: its fields but Policy, then
// a pointer for each of policyFields, named by its config tag, so that
// json decodes the config in one pass and refuses an unknown field by its
// name.
var wireType, ownFields = makeWireType()

func makeWireType() (reflect.Type, int) {
	var fields []reflect.StructField
	t := reflect.TypeFor[ClaimConfig]()
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "Policy" {
			continue
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
		name, _, _ := bytes.Cut([]byte(f.Tag.Get("json")), []byte(","))
		names[string(name)] = true
	}
	own := len(fields)
	for _, f := range policyFields {
		if names[f.name] {
			panic(fmt.Sprintf("ctl.Policy's config tag %q is a field of ClaimConfig's own", f.name))
		}
		fields = append(fields, reflect.StructField{Name: "Policy" + f.field.Name, Type: reflect.PointerTo(f.json),
			Tag: reflect.StructTag(fmt.Sprintf(`json:"%s,omitempty"`, f.name))})
	}
	return reflect.StructOf(fields), own
}

// ParseConfig decodes one opaque configuration strictly: an unknown field,
// a wrong apiVersion or kind is an error that names it.
func ParseConfig(raw []byte) (*ClaimConfig, error) {
	var c ClaimConfig
	if err := c.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	if c.APIVersion != APIVersion || c.Kind != Kind {
		return nil, fmt.Errorf("config of apiVersion %q and kind %q: want %s, %s", c.APIVersion, c.Kind, APIVersion, Kind)
	}
	return &c, nil
}

// UnmarshalJSON decodes a config strictly (an unknown field is an error
// that names it), whatever its apiVersion and kind.
func (c *ClaimConfig) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	w := reflect.New(wireType)
	if err := dec.Decode(w.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) { // name the config's type, not the wire's
			if te.Type == wireType {
				te.Type = reflect.TypeFor[ClaimConfig]()
			}
			if te.Struct == "" && te.Field != "" {
				te.Struct = "ClaimConfig"
			}
		}
		return fmt.Errorf("%s: %w", Kind, err)
	}
	*c = ClaimConfig{}
	cv, wv := reflect.ValueOf(c).Elem(), w.Elem()
	for i := range ownFields {
		cv.Field(i).Set(wv.Field(i))
	}
	for i, f := range policyFields {
		if p := wv.Field(ownFields + i); !p.IsNil() {
			if c.Policy == nil {
				c.Policy = Policy{}
			}
			c.Policy[f.name] = f.fromJSON(p.Elem())
		}
	}
	return nil
}

// MarshalJSON writes c as ParseConfig reads it.
func (c ClaimConfig) MarshalJSON() ([]byte, error) {
	w := reflect.New(wireType).Elem()
	cv := reflect.ValueOf(c)
	for i := range ownFields {
		w.Field(i).Set(cv.Field(i))
	}
	for i, f := range policyFields {
		x, ok := c.Policy[f.name]
		if !ok {
			continue
		}
		v, err := f.toJSON(x)
		if err != nil {
			return nil, err
		}
		p := reflect.New(f.json)
		p.Elem().Set(v)
		w.Field(ownFields + i).Set(p)
	}
	return json.Marshal(w.Interface())
}

// Resolve applies configs in order (the DeviceClass's first, then the
// claim's) over the defaults, and checks the result: the policy by
// ctl.Policy's rules (Normalize), its errors naming the config's fields.
func Resolve(configs []*ClaimConfig) (Settings, error) {
	s := Settings{Policy: ctl.DefaultPolicy, MPS: true, Connections: mps.DefaultConnections}
	p, class := &s.Policy, "none"
	for _, c := range configs {
		set(&class, c.Class)
		set(&s.AllowUnpartitioned, c.AllowUnpartitioned)
		set(&s.AllSMs, c.AllSMs)
		set(&s.MPS, c.MPS)
		set(&s.Connections, c.Connections)
		if err := c.Policy.apply(p); err != nil {
			return s, err
		}
	}
	var err error
	if p.Class, err = ctl.ParseClass(class); err != nil {
		return s, err
	}
	if err := p.Normalize(ctl.ConfigNames); err != nil {
		return s, err
	}
	if s.Connections < 1 || s.Connections > mps.MaxConnections {
		return s, fmt.Errorf("connections %d: want 1 to %d", s.Connections, mps.MaxConnections)
	}
	// a claim's shim sees only its claim's directory, so a share that is
	// not strict would find no neighbour to yield its slot to (shim/bw.c)
	if p.BW > 0 && !p.BWStrict {
		return s, fmt.Errorf("bandwidth %g: a claim's share must be strict (bandwidthStrict: true): its tenant cannot see other claims' wants, only keep to its slot", p.BW)
	}
	return s, nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
