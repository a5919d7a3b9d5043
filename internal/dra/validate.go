// Checking a claim's configs at admission as prepare will (ValidateClaim),
// and how a claim's error reads.

package dra

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
)

// claimError is how a claim's error reads, at prepare and at admission.
func claimError(namespace, name string, err error) error {
	return fmt.Errorf("claim %s/%s: %w", namespace, name, err)
}

// ClassConfigs returns the configs of the DeviceClass name; a class that
// does not exist has none (the scheduler says so when it allocates).
type ClassConfigs func(ctx context.Context, name string) ([]resourceapi.DeviceClassConfiguration, error)

// ValidateClaim checks a claim's (or a claim template's) configs for
// carve's driver as prepare will: for each of its requests (each
// subrequest of a firstAvailable one) that a config of the claim's for
// carve applies to, its class's configs and then the claim's, through
// RequestSettings. A claim with no config for carve is left alone: carve
// takes no stand on other drivers' claims, and its defaults are valid.
//
// What prepare checks against the allocation (the TPCs and memory the
// claim consumed, the GPU it got) is not known yet, and is checked there.
func ValidateClaim(ctx context.Context, spec resourceapi.ResourceClaimSpec, classes ClassConfigs) error {
	ours := false
	for _, c := range spec.Devices.Config {
		ours = ours || c.Opaque != nil && c.Opaque.Driver == DriverName
	}
	if !ours {
		return nil
	}
	type request struct{ name, class string }
	var requests []request
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil {
			requests = append(requests, request{r.Name, r.Exactly.DeviceClassName})
		}
		for _, sub := range r.FirstAvailable {
			requests = append(requests, request{r.Name + "/" + sub.Name, sub.DeviceClassName})
		}
	}
	for _, r := range requests {
		var configs []resourceapi.DeviceAllocationConfiguration
		claims := false
		for _, c := range spec.Devices.Config {
			if c.Opaque != nil && c.Opaque.Driver == DriverName && appliesTo(c.Requests, r.name) {
				claims = true
			}
		}
		if !claims {
			continue
		}
		classConfigs, err := classes(ctx, r.class)
		if err != nil {
			return &classError{r.class, err}
		}
		for _, c := range classConfigs {
			configs = append(configs, resourceapi.DeviceAllocationConfiguration{Source: resourceapi.AllocationConfigSourceClass,
				Requests: []string{r.name}, DeviceConfiguration: c.DeviceConfiguration})
		}
		for _, c := range spec.Devices.Config {
			configs = append(configs, resourceapi.DeviceAllocationConfiguration{Source: resourceapi.AllocationConfigSourceClaim,
				Requests: c.Requests, DeviceConfiguration: c.DeviceConfiguration})
		}
		if _, err := RequestSettings(configs, r.name); err != nil {
			return err
		}
	}
	return nil
}

// classError is a DeviceClass that could not be read: no verdict on the
// claim.
type classError struct {
	class string
	err   error
}

func (e *classError) Error() string { return fmt.Sprintf("reading DeviceClass %s: %v", e.class, e.err) }
func (e *classError) Unwrap() error { return e.err }
