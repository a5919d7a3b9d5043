// Preparing a claim, step by step: its devices and settings, whether it
// joins MPS, its memory limit, its placement, its CDI spec, and what the
// kubelet is told.

package dra

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
)

// stepDone is called after each step of a prepare or an unprepare after
// which a plugin that stops leaves the node half done: "reserved" (the
// claim's directory, no CDI spec yet), "written" (its CDI spec too) and
// "released" (its directory removed, its spec not yet). Tests stop the
// plugin there, as a kill would.
var stepDone = func(step string) {}

// prepare prepares one claim: a partition on the GPU of each of its
// carve devices (one request a GPU), all reserved at once or none. It
// also says whether the claim wanted MPS and got it (nil where it failed).
func (s *state) prepare(c *resourceapi.ResourceClaim) (kubeletplugin.PrepareResult, *mpsChoice) {
	fail := func(err error) (kubeletplugin.PrepareResult, *mpsChoice) {
		return kubeletplugin.PrepareResult{Err: claimError(c.Namespace, c.Name, fmt.Errorf("%v", err))}, nil
	}
	uid := string(c.UID)
	reqs, err := s.devices(c)
	if err != nil {
		return fail(err)
	}
	set := reqs[0].s
	useMPS, err := s.joinsMPS(uid, set)
	if err != nil {
		return fail(err)
	}
	if set.Policy.Mem, err = memoryLimit(reqs, set.Policy.Mem, useMPS); err != nil {
		return fail(err)
	}
	placed, err := s.place(c, reqs, set, useMPS)
	if err != nil {
		return fail(err)
	}
	if placed.NodeView != nil { // placed all the same; the periodic Publish tries again
		klog.Background().Error(placed.NodeView, "The node directory", "claim", klog.KObj(c))
	}
	stepDone("reserved")
	if err := s.writeSpec(uid, placed, reqs, set, useMPS); err != nil {
		return fail(err)
	}
	stepDone("written")
	return s.result(uid, reqs), &mpsChoice{wanted: set.MPS, joined: useMPS}
}

// request is one of a claim's devices of carve's: its allocation, its GPU
// and its settings.
type request struct {
	r resourceapi.DeviceRequestAllocationResult
	g GPU
	s Settings
}

// devices are the claim's devices of carve's, each with its GPU, which
// must be on the node, and its settings, which must be the same for all.
func (s *state) devices(c *resourceapi.ResourceClaim) ([]request, error) {
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("not allocated")
	}
	var reqs []request
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != s.node {
			return nil, fmt.Errorf("allocated from pool %q, and this node's is %q", r.Pool, s.node)
		}
		g, err := s.gpu(r.Device)
		if err != nil {
			return nil, err
		}
		for _, q := range reqs {
			if q.r.Device == r.Device {
				return nil, fmt.Errorf("its requests %s and %s are both on %s, and a claim has one partition on a GPU: ask for one request per GPU", q.r.Request, r.Request, r.Device)
			}
		}
		set, err := RequestSettings(c.Status.Allocation.Devices.Config, r.Request)
		if err != nil {
			return nil, err
		}
		if len(reqs) > 0 && !reflect.DeepEqual(set, reqs[0].s) {
			return nil, fmt.Errorf("its requests %s and %s are configured differently: a claim's partitions on all its GPUs have one class and policy", reqs[0].r.Request, r.Request)
		}
		reqs = append(reqs, request{r: r, g: g, s: set})
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("none of its devices are carve's")
	}
	return reqs, nil
}

// gpu is the GPU of a device name, if it is still on the node.
func (s *state) gpu(device string) (GPU, error) {
	for _, g := range s.gpus {
		if g.DeviceName() != device {
			continue
		}
		present := s.present
		if present == nil {
			present = Present
		}
		if err := present(g.Topology.UUID); err != nil {
			return g, fmt.Errorf("%s: %w", device, err)
		}
		return g, nil
	}
	var names []string
	for _, g := range s.gpus {
		names = append(names, g.DeviceName())
	}
	have := cmp.Or(strings.Join(names, ", "), "no GPU of carve's")
	return GPU{}, fmt.Errorf("device %s is not on this node (it has %s)", device, have)
}

// joinsMPS is whether the claim's containers join carve's MPS: where its
// settings want it and it runs, or, for a claim prepared before (by a
// plugin since restarted), whatever the first prepare gave them, whether
// MPS runs now or not.
func (s *state) joinsMPS(uid string, set Settings) (bool, error) {
	prior, ok, err := s.checkpoint.get(uid)
	if err != nil {
		return false, fmt.Errorf("reading its reservation: %v", err)
	}
	if ok {
		return prior.Root.Flags&ctl.FlagMPS != 0, nil
	}
	return set.MPS && s.paths.MPS.Running(), nil
}

// memoryLimit is the claim's processes' limit, one, counted on each GPU
// (claimMemory): where the requests consumed different memory, the least
// of them. config is the limit its settings give.
func memoryLimit(reqs []request, config ctl.MemLimit, mps bool) (ctl.MemLimit, error) {
	var limit ctl.MemLimit
	for i, q := range reqs {
		m, err := claimMemory(q.r, q.g, config, mps)
		if err != nil {
			return ctl.MemLimit{}, err
		}
		if i == 0 || m.Bytes < limit.Bytes && m.Bytes > 0 {
			limit = m
		}
		if (m.Bytes == 0) != (limit.Bytes == 0) {
			return ctl.MemLimit{}, fmt.Errorf("request %s asks for memory and request %s for none: a claim's processes have one limit, on all its GPUs; ask for memory in each or in none", reqs[0].r.Request, q.r.Request)
		}
	}
	return limit, nil
}

// place reserves the claim's partitions, one on the GPU of each request,
// in the checkpoint.
func (s *state) place(c *resourceapi.ResourceClaim, reqs []request, set Settings, useMPS bool) (*place.Placed, error) {
	var on []place.On
	for _, q := range reqs {
		spec, err := partitionSpec(q.r, q.g, set)
		if err != nil {
			return nil, err
		}
		on = append(on, place.On{Topo: q.g.Topology, Spec: spec, Name: q.r.Device})
	}
	flags := set.Flags()
	if useMPS {
		flags |= ctl.FlagMPS
	}
	return s.checkpoint.reserve(on[0].Topo, place.Request{Claim: &place.Claim{UID: string(c.UID), Name: c.Namespace + "/" + c.Name},
		Spec: on[0].Spec, Flags: flags, Policy: set.Policy, More: on[1:]})
}

// writeSpec writes the claim's CDI spec. Where it cannot, it releases a
// claim it has just reserved (one prepared before may have containers
// running).
func (s *state) writeSpec(uid string, placed *place.Placed, reqs []request, set Settings, useMPS bool) error {
	gpus := make([]GPU, len(reqs))
	for i, q := range reqs {
		gpus[i] = q.g
	}
	cache, err := s.paths.specCache()
	if err == nil {
		err = cache.WriteSpec(s.paths.claimSpec(uid, placed.Dir, set, useMPS, gpus), specName(uid))
	}
	if err != nil {
		if !placed.Again {
			s.checkpoint.release(uid)
		}
		return fmt.Errorf("writing its CDI spec: %v", err)
	}
	return nil
}

// result is what the kubelet is told of a prepared claim: for each
// request, its device and the CDI devices that give it to a container.
func (s *state) result(uid string, reqs []request) kubeletplugin.PrepareResult {
	var devices []kubeletplugin.Device
	for _, q := range reqs {
		ids := []string{CDIDeviceID(uid)}
		if id := s.paths.gpuDeviceID(q.g); id != "" {
			ids = append(ids, id)
		}
		devices = append(devices, kubeletplugin.Device{Requests: []string{q.r.Request}, PoolName: q.r.Pool, DeviceName: q.r.Device,
			CDIDeviceIDs: ids, ShareID: q.r.ShareID})
	}
	return kubeletplugin.PrepareResult{Devices: devices}
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
