// Package dra is carve's Kubernetes DRA driver, the node side: a kubelet
// plugin (built on k8s.io/dynamic-resource-allocation/kubeletplugin) that
// publishes each GPU with its TPCs as a consumable capacity, and prepares
// the claims the scheduler allocated from them: it reserves each claim's
// TPCs on the node (on each GPU of a claim of several) (internal/place, atomic with every other placement),
// and writes a CDI spec that puts libcarve.so, the claim's directory and
// carve's MPS into the claim's containers.
//
// Its state is the claims' directories in carve's runtime directory
// (ctl.Claim), so a restarted plugin picks up where it was, and preparing
// or unpreparing a claim twice does what doing it once did.
package dra

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	configapi "github.com/carve-gpu/carve/internal/api/gpu.carve.dev/v1alpha1"
	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
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
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		r, m := d.prepare(c)
		if r.Err != nil {
			klog.FromContext(ctx).Error(r.Err, "Preparing a claim failed", "claim", klog.KObj(c))
		}
		d.writeStatus(ctx, c, r, m)
		out[c.UID] = r
	}
	return out, nil
}

// stepDone is called after each step of a prepare or an unprepare after
// which a plugin that stops leaves the node half done: "reserved" (the
// claim's directory, no CDI spec yet), "written" (its CDI spec too) and
// "released" (its directory removed, its spec not yet). Tests stop the
// plugin there, as a kill would.
var stepDone = func(step string) {}

// prepare prepares one claim: a partition on the GPU of each of its
// carve devices (one request a GPU), all reserved at once or none. It
// also says whether the claim wanted MPS and got it (nil where it failed).
func (d *Driver) prepare(c *resourceapi.ResourceClaim) (kubeletplugin.PrepareResult, *mpsChoice) {
	fail := func(format string, args ...any) (kubeletplugin.PrepareResult, *mpsChoice) {
		return kubeletplugin.PrepareResult{Err: claimError(c.Namespace, c.Name, fmt.Errorf(format, args...))}, nil
	}
	if c.Status.Allocation == nil {
		return fail("not allocated")
	}
	var reqs []request
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != d.Node {
			return fail("allocated from pool %q, and this node's is %q", r.Pool, d.Node)
		}
		g, err := d.gpu(r.Device)
		if err != nil {
			return fail("%v", err)
		}
		for _, q := range reqs {
			if q.r.Device == r.Device {
				return fail("its requests %s and %s are both on %s, and a claim has one partition on a GPU: ask for one request per GPU", q.r.Request, r.Request, r.Device)
			}
		}
		s, err := RequestSettings(c.Status.Allocation.Devices.Config, r.Request)
		if err != nil {
			return fail("%v", err)
		}
		if len(reqs) > 0 && !reflect.DeepEqual(s, reqs[0].s) {
			return fail("its requests %s and %s are configured differently: a claim's partitions on all its GPUs have one class and policy", reqs[0].r.Request, r.Request)
		}
		reqs = append(reqs, request{r: r, g: g, s: s})
	}
	if len(reqs) == 0 {
		return fail("none of its devices are carve's")
	}
	s := reqs[0].s
	useMPS := s.MPS && d.Paths.MPS.Running()
	prior, ok, err := d.reservation(string(c.UID))
	if err != nil {
		return fail("reading its reservation: %v", err)
	}
	if ok {
		// prepared before (by a plugin since restarted): its containers
		// keep what the first prepare gave them, whether MPS runs now or not
		useMPS = prior.Root.Flags&ctl.FlagMPS != 0
	}
	flags := s.Flags()
	if useMPS {
		flags |= ctl.FlagMPS
	}
	// its processes' limit is one, counted on each GPU: where the requests
	// consumed different memory, the least of them
	config := s.Policy.Mem
	for i, q := range reqs {
		m, err := claimMemory(q.r, q.g, config, useMPS)
		if err != nil {
			return fail("%v", err)
		}
		if i == 0 || m.Bytes < s.Policy.Mem.Bytes && m.Bytes > 0 {
			s.Policy.Mem = m
		}
		if (m.Bytes == 0) != (s.Policy.Mem.Bytes == 0) {
			return fail("request %s asks for memory and request %s for none: a claim's processes have one limit, on all its GPUs; ask for memory in each or in none", reqs[0].r.Request, q.r.Request)
		}
	}
	var more []place.On
	for _, q := range reqs {
		spec, err := partitionSpec(q.r, q.g, s)
		if err != nil {
			return fail("%v", err)
		}
		more = append(more, place.On{Topo: q.g.Topology, Spec: spec, Name: q.r.Device})
	}
	res, err := place.Place(d.Paths.RuntimeDir, more[0].Topo, place.Request{Claim: &place.Claim{UID: string(c.UID),
		Name: c.Namespace + "/" + c.Name}, Spec: more[0].Spec, Flags: flags, Policy: s.Policy, More: more[1:]})
	if err != nil {
		return fail("%v", err)
	}
	stepDone("reserved")
	gpus := make([]GPU, len(reqs))
	for i, q := range reqs {
		gpus[i] = q.g
	}
	cache, err := d.Paths.specCache()
	if err == nil {
		err = cache.WriteSpec(d.Paths.claimSpec(string(c.UID), res.Dir, s, useMPS, gpus), specName(string(c.UID)))
	}
	if err != nil {
		if !res.Again { // a claim prepared before may have containers running
			place.Release(d.Paths.RuntimeDir, string(c.UID))
		}
		return fail("writing its CDI spec: %v", err)
	}
	stepDone("written")
	var devices []kubeletplugin.Device
	for _, q := range reqs {
		ids := []string{CDIDeviceID(string(c.UID))}
		if id := d.Paths.gpuDeviceID(q.g); id != "" {
			ids = append(ids, id)
		}
		devices = append(devices, kubeletplugin.Device{Requests: []string{q.r.Request}, PoolName: q.r.Pool, DeviceName: q.r.Device,
			CDIDeviceIDs: ids, ShareID: q.r.ShareID})
	}
	return kubeletplugin.PrepareResult{Devices: devices}, &mpsChoice{wanted: s.MPS, joined: useMPS}
}

// request is one of a claim's devices of carve's: its allocation, its GPU
// and its settings.
type request struct {
	r resourceapi.DeviceRequestAllocationResult
	g GPU
	s Settings
}

// gpu is the GPU of a device name, if it is still on the node.
func (d *Driver) gpu(device string) (GPU, error) {
	for _, g := range d.GPUs {
		if g.DeviceName() != device {
			continue
		}
		present := d.Present
		if present == nil {
			present = Present
		}
		if err := present(g.Topology.UUID); err != nil {
			return g, fmt.Errorf("%s: %w", device, err)
		}
		return g, nil
	}
	var names []string
	for _, g := range d.GPUs {
		names = append(names, g.DeviceName())
	}
	have := cmp.Or(strings.Join(names, ", "), "no GPU of carve's")
	return GPU{}, fmt.Errorf("device %s is not on this node (it has %s)", device, have)
}

// partitionSpec is the partition a claim gets: as many TPCs as it consumed
// of the device's capacity (the whole GPU where the cluster allocated the
// device whole). A BE claim names none: it runs on every TPC and yields to
// LS ones, and what it consumed only takes that many from the scheduler's
// count of free TPCs, which must cover its floor.
func partitionSpec(r resourceapi.DeviceRequestAllocationResult, g GPU, s Settings) (partition.Spec, error) {
	n := int64(len(g.Topology.TPCs))
	if q, ok := r.ConsumedCapacity[CapacityTPCs]; ok {
		n = q.Value()
	}
	if s.Policy.Floor > 0 && n < int64(s.Policy.Floor) {
		return partition.Spec{}, fmt.Errorf("it asks for %d TPCs and a BE floor of %d: ask for at least the floor's, so that the scheduler counts them", n, s.Policy.Floor)
	}
	if spec, ok := place.DefaultSpec(s.Policy); ok {
		return spec, nil
	}
	if n < 1 {
		return partition.Spec{}, fmt.Errorf("it asks for %d TPCs: a partition needs at least 1 (only a BE claim may ask for none)", n)
	}
	return partition.CountOf(int(n)), nil
}

// claimMemory is the memory limit of a claim's processes: what the claim
// consumed of the device's memory capacity, less, outside MPS, the reserve
// for its context, which the limit does not hold there (so that the node
// counts the claim as the scheduler did: place.MemCharge); or its config's
// limit (config), which must be within that. A claim that consumed no
// memory runs without a limit.
func claimMemory(r resourceapi.DeviceRequestAllocationResult, g GPU, config ctl.MemLimit, mps bool) (ctl.MemLimit, error) {
	var consumed uint64
	if q, ok := r.ConsumedCapacity[CapacityMemory]; ok && q.Sign() > 0 {
		consumed = uint64(q.Value())
	}
	within := consumed
	if consumed > 0 && !mps {
		if consumed <= place.ContextReserve {
			return ctl.MemLimit{}, fmt.Errorf("it asks for %s of memory outside MPS, where its context takes about %s of it: ask for more",
				quantity(consumed), quantity(place.ContextReserve))
		}
		within -= place.ContextReserve
	}
	if config == (ctl.MemLimit{}) {
		return ctl.MemLimit{Bytes: within}, nil
	}
	limit, err := config.Resolve(g.Topology.MemoryBytes)
	if err != nil {
		return ctl.MemLimit{}, fmt.Errorf("memory: %w", err)
	}
	if limit > within {
		need := place.MemCharge(limit, mps)
		need += (MemoryStep - need%MemoryStep) % MemoryStep
		return ctl.MemLimit{}, fmt.Errorf("its config limits its memory to %s, and it asks the scheduler for %s: ask for memory: %s in its capacity request, so that the scheduler counts it",
			config, quantity(consumed), quantity(need))
	}
	return ctl.MemLimit{Bytes: limit}, nil
}

// quantity is bytes as Kubernetes writes them ("12Gi").
func quantity(bytes uint64) string {
	return resource.NewQuantity(int64(bytes), resource.BinarySI).String()
}

// UnprepareResourceClaims frees each claim's TPCs and removes its directory
// and CDI spec. A claim that is not prepared is no error.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	cache, err := d.Paths.specCache()
	if err != nil {
		return nil, err
	}
	for _, c := range claims {
		_, err := place.Release(d.Paths.RuntimeDir, string(c.UID))
		if err == nil {
			stepDone("released")
			err = cache.RemoveSpec(specName(string(c.UID)))
		}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Unpreparing a claim failed", "claim", c.NamespacedName)
		}
		out[c.UID] = err
	}
	return out, nil
}

// Sweep removes CDI specs of the driver's whose claim is not reserved: left
// by a plugin stopped between writing a spec and returning its error.
func (d *Driver) Sweep() error {
	claims, _, err := ctl.Claims(d.Paths.RuntimeDir)
	if err != nil {
		return err
	}
	reserved := map[string]bool{}
	for _, c := range claims {
		reserved[specName(c.UID)] = true
	}
	entries, err := os.ReadDir(d.Paths.CDIDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	prefix := cdi.GenerateSpecName(CDIVendor, CDIClass) + "_"
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, prefix) && !reserved[name] {
			os.Remove(filepath.Join(d.Paths.CDIDir, name))
		}
	}
	return nil
}

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
