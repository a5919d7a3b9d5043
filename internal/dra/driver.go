// Package dra is carve's Kubernetes DRA driver, the node side: a kubelet
// plugin (built on k8s.io/dynamic-resource-allocation/kubeletplugin) that
// publishes each GPU with its TPCs as a consumable capacity, and prepares
// the claims the scheduler allocated from them: it reserves each claim's
// TPCs on the node (on each GPU of a claim of several) (internal/place, atomic with every other placement),
// and writes a CDI spec that puts libcarve.so, the claim's directory and
// carve's MPS into the claim's containers.
//
// Driver is the plugin's side towards the kubelet (this file): its calls,
// each handed to the claim state (state.go), whose checkpoint is the
// claims' directories in carve's runtime directory (checkpoint.go), so a
// restarted plugin picks up where it was, and preparing or unpreparing a
// claim twice does what doing it once did. Prepare's steps are in
// prepare.go; a claim's config is internal/api/gpu.carve.dev/v1alpha1's.
package dra

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	configapi "github.com/carve-gpu/carve/internal/api/gpu.carve.dev/v1alpha1"
)

// DriverName is the DRA driver's name, and the domain of its attributes.
const DriverName = configapi.GroupName

// Driver prepares and unprepares claims on one node.
type Driver struct {
	Node   string
	GPUs   []GPU
	Paths  Paths
	Client kubernetes.Interface // for claims' status; nil: not written
	// Present reports an error if a GPU (by UUID) has left the node
	// (default: the NVIDIA driver's list).
	Present func(uuid string) error
	// Health watches the GPUs' health: unhealthy ones are tainted in the
	// ResourceSlice and reported to the kubelet (nil: not watched).
	Health *Health
}

// resources is what the driver publishes now: its GPUs, tainted where
// they are unhealthy.
func (d *Driver) resources() resourceslice.DriverResources {
	if d.Health == nil {
		return Resources(d.Node, d.GPUs)
	}
	return d.Health.Resources(d.Node)
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// PrepareResourceClaims reserves each claim's TPCs and writes its CDI spec.
// A claim that fails gets its error in the result (the kubelet puts it in
// the pod's events) and in its status; nothing of it is left on the node.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	s := d.state()
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		r, m := s.prepare(c)
		if r.Err != nil {
			klog.FromContext(ctx).Error(r.Err, "Preparing a claim failed", "claim", klog.KObj(c))
		}
		d.writeStatus(ctx, c, r, m)
		out[c.UID] = r
	}
	return out, nil
}

// UnprepareResourceClaims frees each claim's TPCs and removes its directory
// and CDI spec. A claim that is not prepared is no error.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	s := d.state()
	specs, err := s.paths.specCache()
	if err != nil {
		return nil, err
	}
	out := map[types.UID]error{}
	for _, c := range claims {
		err := s.unprepare(specs, string(c.UID))
		if err != nil {
			klog.FromContext(ctx).Error(err, "Unpreparing a claim failed", "claim", c.NamespacedName)
		}
		out[c.UID] = err
	}
	return out, nil
}

// Sweep removes CDI specs of the driver's whose claim is not reserved: left
// by a plugin stopped between writing a spec and returning its error; and
// brings the claims published in the node directory, where there is one,
// up to date (place.Publish): a copy of each claim prepared, none of
// another.
func (d *Driver) Sweep() error { return d.state().sweep() }

// HandleError is called for errors in the background, such as publishing
// ResourceSlices; all of them are logged and retried.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

// WatchHealthStatus reports the GPUs' health to the kubelet, where the
// driver watches it (Health).
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	if d.Health == nil {
		return kubeletplugin.ErrHealthNotSupported
	}
	return d.Health.Watch(ctx, d.Node, reports)
}
