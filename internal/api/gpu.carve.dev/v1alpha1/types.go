// The ClaimConfig type, its group, version and kind, and Settings, what a
// claim's configs come to.

package v1alpha1

import (
	"github.com/carve-gpu/carve/internal/ctl"
)

// GroupName is the API group of the config, the DRA driver's name.
const GroupName = "gpu.carve.dev"

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
	Version    = "v1alpha1"
	APIVersion = GroupName + "/" + Version
	Kind       = "ClaimConfig"
)

// ClaimConfig is a claim's configuration. Fields left out keep the value
// an earlier config (the DeviceClass's) or the default gave them.
//
// In JSON it is one object: apiVersion, kind, the fields below by their
// json names, and the policy's fields by their config tags (see Policy).
type ClaimConfig struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
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
	// Policy is what the config says of the tenant's policy (see carve run
	// --help): a BE claim's bounds, its share and the TPCs it keeps to
	// while LS work is in flight, an LS claim's own TPCs, and the memory
	// its processes may allocate together, a size ("12G", powers of 1024)
	// or a share of the GPU's memory ("25%"), below what the claim consumed
	// of the device's memory capacity, which is otherwise its limit.
	Policy Policy `json:"-"`
}

// Settings is a claim's configuration with every default filled in.
type Settings struct {
	Policy             ctl.Policy
	AllowUnpartitioned bool
	AllSMs             bool
	MPS                bool
	Connections        int
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
