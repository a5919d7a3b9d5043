// A claim's settings from the configs of its allocation, or of its spec
// and its classes at admission (RequestSettings), by the claim config of
// internal/api/gpu.carve.dev/v1alpha1.

package dra

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	configapi "github.com/carve-gpu/carve/internal/api/gpu.carve.dev/v1alpha1"
)

// Settings is a claim's configuration with every default filled in.
type Settings = configapi.Settings

// RequestSettings are the settings of a claim's request from its
// configs (an allocation's, or the claim's spec and its classes' made into
// one at admission): those for carve's driver that apply to request, the
// DeviceClass's first, then the claim's, parsed strictly and resolved.
// Prepare and the admission webhook both call it, so a config is refused
// by the one rule, with the one message.
func RequestSettings(configs []resourceapi.DeviceAllocationConfiguration, request string) (Settings, error) {
	var out []*configapi.ClaimConfig
	for _, src := range []struct {
		source resourceapi.AllocationConfigSource
		name   string
	}{{resourceapi.AllocationConfigSourceClass, "DeviceClass"}, {resourceapi.AllocationConfigSourceClaim, "claim"}} {
		for _, c := range configs {
			if c.Source != src.source || c.Opaque == nil || c.Opaque.Driver != DriverName || !appliesTo(c.Requests, request) {
				continue
			}
			cfg, err := configapi.ParseConfig(c.Opaque.Parameters.Raw)
			if err != nil {
				return Settings{}, fmt.Errorf("the %s's config: %w", src.name, err)
			}
			out = append(out, cfg)
		}
	}
	return configapi.Resolve(out)
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
