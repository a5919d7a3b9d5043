// Claim configs for carve-dra's tests: the cases its admission webhook and
// prepare must agree on (dra's unit tests, and the end-to-end test against
// a real API server), and the claim of 8 TPCs each is a config of.

package dratest

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/carve-gpu/carve/internal/api/gpu.carve.dev/v1alpha1"
)

// driver is carve-dra's name (dra.DriverName), and capacityTPCs the
// capacity of its devices that counts TPCs (dra.CapacityTPCs).
const (
	driver       = configapi.GroupName
	capacityTPCs = "tpcs"
)

// ConfigCase is a claim of 8 TPCs with the given configs for carve of its
// DeviceClass's and of its own.
type ConfigCase struct {
	Name         string
	Class, Claim []string
}

// ClaimConfig is a ClaimConfig object with fields (each after a comma).
func ClaimConfig(fields string) string {
	return `{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig"` + fields + `}`
}

// ConfigCases are valid and malformed configs, of the claim and of its
// class.
var ConfigCases = []ConfigCase{
	{Name: "none"},
	{Name: "ls", Claim: []string{ClaimConfig(`, "class": "ls", "own": true`)}},
	{Name: "be", Claim: []string{ClaimConfig(`, "class": "be", "inflight": 4, "beShare": 0.5, "beFloor": 4, "queue": "300us"`)}},
	{Name: "be-in-two", Claim: []string{ClaimConfig(`, "class": "be"`), ClaimConfig(`, "inflight": 2`)}},
	{Name: "be-by-class", Class: []string{ClaimConfig(`, "class": "be"`)}, Claim: []string{ClaimConfig(`, "inflight": 2`)}},
	{Name: "mps-off", Claim: []string{ClaimConfig(`, "mps": false, "allSMs": true, "allowUnpartitioned": true`)}},
	{Name: "unknown-field", Claim: []string{ClaimConfig(`, "clas": "ls"`)}},
	{Name: "wrong-kind", Claim: []string{`{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "Config", "class": "ls"}`}},
	{Name: "bad-class", Claim: []string{ClaimConfig(`, "class": "gold"`)}},
	{Name: "share-over-1", Claim: []string{ClaimConfig(`, "class": "be", "beShare": 1.5`)}},
	{Name: "bad-memory", Claim: []string{ClaimConfig(`, "memory": "12X"`)}},
	{Name: "ls-with-be-knob", Claim: []string{ClaimConfig(`, "class": "ls", "inflight": 4`)}},
	{Name: "ls-by-class-be-knob", Class: []string{ClaimConfig(`, "class": "ls"`)}, Claim: []string{ClaimConfig(`, "beShare": 0.2`)}},
	{Name: "connections-0", Claim: []string{ClaimConfig(`, "connections": 0`)}},
}

// NewClaim is the case's claim as a user writes it, in namespace ns: a
// request of class for 8 TPCs and its configs.
func (c ConfigCase) NewClaim(class string) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: c.Name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Capacity: &resourceapi.CapacityRequirements{
				Requests: map[resourceapi.QualifiedName]resource.Quantity{capacityTPCs: resource.MustParse("8")}}}}}}}}
	for _, cfg := range c.Claim {
		claim.Spec.Devices.Config = append(claim.Spec.Devices.Config, resourceapi.DeviceClaimConfiguration{
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: Raw(cfg)}}})
	}
	return claim
}

// ClassConfigs is the DeviceClass configs of the case, as the API has them.
func (c ConfigCase) ClassConfigs() []resourceapi.DeviceClassConfiguration {
	var out []resourceapi.DeviceClassConfiguration
	for _, cfg := range c.Class {
		out = append(out, resourceapi.DeviceClassConfiguration{
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: Raw(cfg)}}})
	}
	return out
}

// Raw is the JSON s as an object's raw parameters.
func Raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
