package dra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
)

// The opaque configuration a DeviceClass or a claim gives carve's driver:
//
//	config:
//	- opaque:
//	    driver: gpu.carve.dev
//	    parameters:
//	      apiVersion: gpu.carve.dev/v1alpha1
//	      kind: ClaimConfig
//	      class: ls
const (
	ConfigAPIVersion = DriverName + "/v1alpha1"
	ConfigKind       = "ClaimConfig"
)

// Config is a claim's configuration. Fields left out keep the value an
// earlier config (the DeviceClass's) or the default gave them.
type Config struct {
	metav1.TypeMeta `json:",inline"`
	// Class: "ls" (latency-sensitive: holds its TPCs, holds BE tenants back
	// while it has work on the GPU), "be" (best-effort: the whole GPU while
	// LS tenants are idle), or "none" (a plain partition; the default).
	Class *string `json:"class,omitempty"`
	// AllowUnpartitioned runs the containers on all TPCs where the
	// partition cannot be enforced, rather than stopping them.
	AllowUnpartitioned *bool `json:"allowUnpartitioned,omitempty"`
	// AllSMs reports the whole GPU's SM count to programs, not the
	// partition's.
	AllSMs *bool `json:"allSMs,omitempty"`
	// MPS: join carve's MPS daemon on the node where it runs (the
	// default); false keeps the containers out of its fault domain.
	MPS *bool `json:"mps,omitempty"`
	// Connections is CUDA_DEVICE_MAX_CONNECTIONS under MPS.
	Connections *int `json:"connections,omitempty"`
	// A BE claim's policy (see carve run --help): its bounds, its share
	// and the TPCs it keeps to while LS work is in flight.
	Inflight *int             `json:"inflight,omitempty"`
	Queue    *metav1.Duration `json:"queue,omitempty"`
	BEShare  *float64         `json:"beShare,omitempty"`
	Epoch    *metav1.Duration `json:"epoch,omitempty"`
	BEFloor  *int             `json:"beFloor,omitempty"`
	Slice    *metav1.Duration `json:"slice,omitempty"`
	// Own keeps an LS claim to its own TPCs (see carve run --own).
	Own *bool `json:"own,omitempty"`
	// Memory limits what the claim's processes may allocate together, a
	// size ("12G", powers of 1024) or a share of the GPU's memory ("25%"),
	// below what the claim consumed of the device's memory capacity, which
	// is otherwise its limit (see claimMemory).
	Memory *string `json:"memory,omitempty"`
}

// Settings is a claim's configuration with every default filled in.
type Settings struct {
	Policy             ctl.Policy
	AllowUnpartitioned bool
	AllSMs             bool
	MPS                bool
	Connections        int
}

// ParseConfig decodes one opaque configuration strictly: an unknown field,
// a wrong apiVersion or kind is an error that names it.
func ParseConfig(raw []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigKind, err)
	}
	if c.APIVersion != ConfigAPIVersion || c.Kind != ConfigKind {
		return nil, fmt.Errorf("config of apiVersion %q and kind %q: want %s, %s", c.APIVersion, c.Kind, ConfigAPIVersion, ConfigKind)
	}
	return &c, nil
}

// Resolve applies configs in order (the DeviceClass's first, then the
// claim's) over the defaults, and checks the result.
func Resolve(configs []*Config) (Settings, error) {
	s := Settings{Policy: ctl.DefaultPolicy, MPS: true, Connections: mps.DefaultConnections}
	p, class := &s.Policy, "none"
	for _, c := range configs {
		set(&class, c.Class)
		set(&s.AllowUnpartitioned, c.AllowUnpartitioned)
		set(&s.AllSMs, c.AllSMs)
		set(&s.MPS, c.MPS)
		set(&s.Connections, c.Connections)
		set(&p.Inflight, c.Inflight)
		setDuration(&p.Queue, c.Queue)
		set(&p.Share, c.BEShare)
		setDuration(&p.Epoch, c.Epoch)
		set(&p.Floor, c.BEFloor)
		setDuration(&p.Slice, c.Slice)
		set(&p.Own, c.Own)
		if c.Memory != nil {
			m, err := ctl.ParseMemLimit(*c.Memory)
			if err != nil {
				return s, fmt.Errorf("memory: %w", err)
			}
			p.Mem = m
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
	return s, nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func setDuration(dst *time.Duration, v *metav1.Duration) {
	if v != nil {
		*dst = v.Duration
	}
}

// Flags are the control block's flags for s.
func (s Settings) Flags() uint32 {
	var f uint32
	if s.AllowUnpartitioned {
		f |= ctl.FlagAllowUnpartitioned
	}
	if s.AllSMs {
		f |= ctl.FlagAllSMs
	}
	return f
}

// RequestSettings are the settings of a claim's request from its
// configs (an allocation's, or the claim's spec and its classes' made into
// one at admission): those for carve's driver that apply to request, the
// DeviceClass's first, then the claim's, parsed strictly and resolved.
// Prepare and the admission webhook both call it, so a config is refused
// by the one rule, with the one message.
func RequestSettings(configs []resourceapi.DeviceAllocationConfiguration, request string) (Settings, error) {
	var out []*Config
	for _, src := range []struct {
		source resourceapi.AllocationConfigSource
		name   string
	}{{resourceapi.AllocationConfigSourceClass, "DeviceClass"}, {resourceapi.AllocationConfigSourceClaim, "claim"}} {
		for _, c := range configs {
			if c.Source != src.source || c.Opaque == nil || c.Opaque.Driver != DriverName || !appliesTo(c.Requests, request) {
				continue
			}
			cfg, err := ParseConfig(c.Opaque.Parameters.Raw)
			if err != nil {
				return Settings{}, fmt.Errorf("the %s's config: %w", src.name, err)
			}
			out = append(out, cfg)
		}
	}
	return Resolve(out)
}

// appliesTo reports whether a config for requests (all when empty) applies
// to request (which may name a subrequest, "main/sub").
func appliesTo(requests []string, request string) bool {
	if len(requests) == 0 {
		return true
	}
	main, _, _ := strings.Cut(request, "/")
	for _, r := range requests {
		if r == request || r == main {
			return true
		}
	}
	return false
}
