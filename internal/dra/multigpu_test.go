// Tests of claims on several GPUs: a partition on each, reserved all or
// nothing, and the device ordinals their containers see.

package dra

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// newTwoGPUDriver is a test driver on a node of two GPUs whose live TPCs
// differ: the recorded H100 and topotest's second.
func newTwoGPUDriver(t *testing.T) *testDriver {
	td := newTestDriver(t)
	td.GPUs = append(td.GPUs, GPU{Index: 1, Topology: topotest.Second(t)})
	return td
}

// spread makes c's allocation one request a GPU: tpcs[i] TPCs of gpu-i,
// request gpu-i.
func spread(c *resourceapi.ResourceClaim, tpcs ...int64) {
	var results []resourceapi.DeviceRequestAllocationResult
	for i, n := range tpcs {
		share := types.UID("share-" + c.Name)
		device := []string{"gpu-0", "gpu-1"}[i]
		results = append(results, resourceapi.DeviceRequestAllocationResult{Request: device, Driver: DriverName, Pool: node, Device: device,
			ShareID: &share, ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{CapacityTPCs: *resource.NewQuantity(n, resource.DecimalSI)}})
	}
	c.Status.Allocation.Devices.Results = results
}

// TestClaimOfTwoGPUs: a claim with a request on each of two GPUs gets a
// partition on each, made from that GPU's topology, reserved at once; each
// device's result carries the claim's CDI device and its GPU's, the claim's
// status names each GPU's TPCs, and unpreparing frees both.
func TestClaimOfTwoGPUs(t *testing.T) {
	td := newTwoGPUDriver(t)
	c := td.claim(t, "two", 0, `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`)
	spread(c, 10, 20)
	r := td.prepare(t, c)["two"]
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if len(r.Devices) != 2 {
		t.Fatalf("devices %+v, want one a GPU", r.Devices)
	}
	for i, d := range r.Devices {
		g := td.GPUs[i]
		want := "carve.dev/claim=uid-two nvidia.com/gpu=" + g.Topology.UUID
		if d.DeviceName != g.DeviceName() || d.Requests[0] != g.DeviceName() || strings.Join(d.CDIDeviceIDs, " ") != want {
			t.Errorf("device %d: %+v, want CDI devices %s", i, d, want)
		}
	}
	claims, _, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims %v %v", claims, err)
	}
	for i, want := range []int{10, 20} {
		top := td.GPUs[i].Topology
		part, ok := place.PartOn(claims[0].Root, top)
		if !ok || part.Mask.Enable().And(top.Live()).Count() != want || part.Mask.Enable().And(top.Live()) != part.Mask.Enable() {
			t.Errorf("GPU %d: partition %+v (%v), want %d of its own live TPCs", i, part, ok, want)
		}
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(td.Paths.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil || len(cache.GetErrors()) > 0 {
		t.Fatalf("the CDI library: %v %v", err, cache.GetErrors())
	}
	spec := &oci.Spec{Process: &oci.Process{Env: []string{"PATH=/bin"}}}
	if _, err := cache.InjectDevices(spec, "carve.dev/claim=uid-two", "carve.dev/claim=uid-two"); err != nil {
		t.Fatal(err)
	}
	if env := strings.Join(spec.Process.Env, " "); strings.Count(env, "LD_PRELOAD=") != 1 || !strings.Contains(env, VarClaim+"=uid-two") {
		t.Errorf("a container of both requests: env %q, want the shim preloaded once", env)
	}
	ro := map[string]bool{}
	for _, m := range spec.Mounts {
		if strings.HasSuffix(m.Destination, ctl.NodeDirSuffix) && slices.Contains(m.Options, "ro") {
			ro[m.Destination] = true
		}
	}
	for _, g := range td.GPUs {
		if d := filepath.Join(ContainerDir, ctl.NodeName(g.Topology.UUID)+ctl.NodeDirSuffix); !ro[d] {
			t.Errorf("a container of both requests: no read-only mount of %s (its LS files)", d)
		}
	}
	if len(spec.Mounts) != 2+len(td.GPUs) {
		t.Errorf("a container of both requests: mounts %+v, want the shim's, the claim directory's and each GPU's LS files' once", spec.Mounts)
	}
	cur, err := td.client.ResourceV1().ResourceClaims("ns").Get(t.Context(), "two", metav1.GetOptions{})
	if err != nil || len(cur.Status.Devices) != 2 {
		t.Fatalf("status %+v %v", cur.Status.Devices, err)
	}
	for i, d := range cur.Status.Devices {
		if d.Device != td.GPUs[i].DeviceName() || !strings.Contains(string(d.Data.Raw), `"gpu":"`+td.GPUs[i].Topology.UUID+`"`) ||
			!strings.Contains(string(d.Data.Raw), []string{`"count":10`, `"count":20`}[i]) {
			t.Errorf("status of device %d: %s %s", i, d.Device, d.Data.Raw)
		}
	}
	td.unprepareOK(t, c)
	for _, g := range td.GPUs {
		if hs, _ := place.Holders(td.Paths.RuntimeDir, g.Topology); len(hs) != 0 {
			t.Errorf("%s after unprepare: %+v", g.DeviceName(), hs)
		}
	}
}

// TestClaimOfTwoGPUsAllOrNothing: a claim that does not fit on one of its
// GPUs reserves nothing on the other; one whose requests differ in class
// is refused.
func TestClaimOfTwoGPUsAllOrNothing(t *testing.T) {
	td := newTwoGPUDriver(t)
	full := td.claim(t, "full", 60)
	full.Status.Allocation.Devices.Results[0].Device = "gpu-1"
	if r := td.prepare(t, full)["full"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	c := td.claim(t, "two", 0)
	spread(c, 8, 8)
	if r := td.prepare(t, c)["two"]; r.Err == nil || !strings.Contains(r.Err.Error(), "gpu-1: partitions would overlap: 8 TPCs asked for, 2 of 62 are free") {
		t.Errorf("8 TPCs on a GPU with 2 free: %v", r.Err)
	}
	if hs, _ := place.Holders(td.Paths.RuntimeDir, td.GPUs[0].Topology); len(hs) != 0 {
		t.Errorf("a refused claim of two GPUs holds %+v on the first", hs)
	}
	mixed := td.claim(t, "mixed", 0)
	spread(mixed, 2, 2)
	ls := `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`
	mixed.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
		Requests: []string{"gpu-0"}, DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: DriverName, Parameters: runtimeRaw(ls)}}}}
	if r := td.prepare(t, mixed)["mixed"]; r.Err == nil || !strings.Contains(r.Err.Error(), "configured differently") {
		t.Errorf("an LS request and a plain one in a claim: %v", r.Err)
	}
}

// TestOrdinalsInContainers: the device ordinals a claim's containers see
// of its GPUs: with each GPU's own CDI device, the claim's GPUs alone, in
// the node's order.
func TestOrdinalsInContainers(t *testing.T) {
	gpus := []GPU{{Index: 5, Topology: &topo.Topology{}}, {Index: 2, Topology: &topo.Topology{}}}
	if got := (Paths{GPUDevice: "nvidia.com/gpu={index}"}).ordinals(gpus); got[0] != 1 || got[1] != 0 {
		t.Errorf("with the GPUs' CDI devices: %v, want [1 0]", got)
	}
	if got := (Paths{}).ordinals(gpus); got[0] != 5 || got[1] != 2 {
		t.Errorf("with the node's devices: %v, want [5 2]", got)
	}
}
