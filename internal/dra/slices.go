// The node's GPUs as the driver publishes them: one device a GPU, with
// its TPCs and memory as consumable capacities, in the node's
// ResourceSlice.

package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/carve-gpu/carve/internal/topo"
)

// The capacities of a GPU device that claims consume: TPCs, and bytes of
// memory, in steps of MemoryStep.
const (
	CapacityTPCs   = "tpcs"
	CapacityMemory = "memory"
	MemoryStep     = 256 << 20
)

// GPU is one of the node's GPUs as the driver publishes it.
type GPU struct {
	Index    int
	Topology *topo.Topology
}

// DeviceName is the GPU's device name in the node's pool.
func (g GPU) DeviceName() string { return fmt.Sprintf("gpu-%d", g.Index) }

// Device is the GPU as a device of a ResourceSlice: its live TPCs and its
// memory are consumable capacities that any number of claims share (each
// consumes what it asks for; one that asks for no TPCs takes the whole
// GPU's, one that asks for no memory none of it, and its processes run
// without a memory limit), and its attributes let a DeviceClass or a claim
// select by model, UUID or size.
func (g GPU) Device() resourceapi.Device {
	t := g.Topology
	tpcs := int64(len(t.TPCs))
	whole := resource.NewQuantity(tpcs, resource.DecimalSI)
	d := resourceapi.Device{
		Name: g.DeviceName(),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"uuid":              {StringValue: ptr.To(t.UUID)},
			"model":             {StringValue: ptr.To(t.Device)},
			"index":             {IntValue: ptr.To(int64(g.Index))},
			"driverVersion":     {StringValue: ptr.To(t.Driver)},
			"computeCapability": {StringValue: ptr.To(t.Compute)},
			"tpcs":              {IntValue: ptr.To(tpcs)},
			"sms":               {IntValue: ptr.To(int64(t.SMCount))},
			"gpcs":              {IntValue: ptr.To(int64(len(t.GPCs)))},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			CapacityTPCs: {
				Value: *whole,
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default: whole,
					ValidRange: &resourceapi.CapacityRequestPolicyRange{
						Min:  resource.NewQuantity(0, resource.DecimalSI),
						Max:  whole,
						Step: resource.NewQuantity(1, resource.DecimalSI),
					},
				},
			},
		},
		AllowMultipleAllocations: ptr.To(true),
	}
	if t.MemoryBytes > 0 {
		mem := int64(t.MemoryBytes)
		d.Attributes["memory"] = resourceapi.DeviceAttribute{IntValue: ptr.To(mem)}
		d.Capacity[CapacityMemory] = resourceapi.DeviceCapacity{
			Value: *resource.NewQuantity(mem, resource.BinarySI),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default: resource.NewQuantity(0, resource.BinarySI),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{
					Min:  resource.NewQuantity(0, resource.BinarySI),
					Max:  resource.NewQuantity(mem-mem%MemoryStep, resource.BinarySI),
					Step: resource.NewQuantity(MemoryStep, resource.BinarySI),
				},
			},
		}
	}
	return d
}

// Resources is what the driver publishes: one pool, named after the node,
// with a device for each GPU.
func Resources(node string, gpus []GPU) resourceslice.DriverResources {
	var devices []resourceapi.Device
	for _, g := range gpus {
		devices = append(devices, g.Device())
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}

// Present reports an error if the GPU of uuid is not (any more) on the node:
// the NVIDIA kernel driver lists each GPU it drives in
// /proc/driver/nvidia/gpus/*/information with its UUID.
func Present(uuid string) error {
	files, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), uuid) {
			return nil
		}
	}
	return fmt.Errorf("GPU %s is not on this node any more (the NVIDIA driver does not list it)", uuid)
}
