// What the end-to-end tests share of a driver: one for the recorded H100
// on node-a, built on dra's exported API, a fake kubelet of its sockets,
// and what is left on the node.

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/dra"
	"github.com/carve-gpu/carve/internal/dra/dratest"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

const node = "node-a"

// testDriver is a driver for the recorded H100 on node-a, with its runtime
// and CDI directories in a temporary directory and claims in a fake API
// (until a test gives it a client of its own).
type testDriver struct {
	*dra.Driver
	client *fake.Clientset
}

func newTestDriver(t *testing.T) *testDriver {
	t.Helper()
	dir := t.TempDir()
	shim := filepath.Join(dir, "libcarve.so")
	os.WriteFile(shim, []byte("not a library"), 0o755)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-a-uid"}}
	td := &testDriver{client: fake.NewClientset(n)}
	td.Driver = &dra.Driver{
		Node: node,
		GPUs: []dra.GPU{{Index: 0, Topology: topotest.H100(t)}},
		Paths: dra.Paths{RuntimeDir: filepath.Join(dir, "run"), CDIDir: filepath.Join(dir, "cdi"), Shim: shim,
			MPS: mps.Daemon{Root: filepath.Join(dir, "mps")}, GPUDevice: "nvidia.com/gpu={uuid}"},
		Client:  td.client,
		Present: func(string) error { return nil },
	}
	os.MkdirAll(td.Paths.RuntimeDir, 0o700)
	return td
}

// claim is an allocated claim in namespace ns for tpcs TPCs of gpu-0 with
// the given opaque configs of the claim, created in the fake API.
func (td *testDriver) claim(t *testing.T, name string, tpcs int64, configs ...string) *resourceapi.ResourceClaim {
	t.Helper()
	share := types.UID("share-" + name)
	res := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: dra.DriverName, Pool: node, Device: "gpu-0", ShareID: &share,
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{dra.CapacityTPCs: *resource.NewQuantity(tpcs, resource.DecimalSI)}}
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{res}},
		}},
	}
	for _, cfg := range configs {
		c.Status.Allocation.Devices.Config = append(c.Status.Allocation.Devices.Config, resourceapi.DeviceAllocationConfiguration{
			Source:              resourceapi.AllocationConfigSourceClaim,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: dra.DriverName, Parameters: dratest.Raw(cfg)}},
		})
	}
	if err := td.client.Tracker().Add(c); err != nil { // as the API has it, not as a call of the plugin's
		t.Fatal(err)
	}
	return c
}

// prepareError is what prepare says of the case's claim: "" where it
// prepares it (and then unprepares it).
func prepareError(t *testing.T, c dratest.ConfigCase) string {
	t.Helper()
	td := newTestDriver(t)
	claim := td.claim(t, c.Name, 8, c.Claim...)
	for _, cfg := range c.Class {
		claim.Status.Allocation.Devices.Config = append(claim.Status.Allocation.Devices.Config, resourceapi.DeviceAllocationConfiguration{
			Source: resourceapi.AllocationConfigSourceClass, Requests: []string{"gpu"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: dra.DriverName, Parameters: dratest.Raw(cfg)}}})
	}
	ctx := context.Background()
	got, err := td.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := got[claim.UID]
	if !ok {
		t.Fatalf("no result for claim %s", claim.Name)
	}
	if r.Err != nil {
		return r.Err.Error()
	}
	un, err := td.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: claim.UID}})
	if err != nil || un[claim.UID] != nil {
		t.Errorf("unprepare %s: %v %v", claim.Name, err, un[claim.UID])
	}
	return ""
}

// reserved are the TPCs of each reserved claim, by claim name.
func (td *testDriver) reserved(t *testing.T) map[string]partition.Set {
	t.Helper()
	claims, pending, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil || len(pending) > 0 {
		t.Fatalf("claims: %v, pending %v", err, pending)
	}
	out := map[string]partition.Set{}
	for _, c := range claims {
		out[strings.TrimPrefix(c.Name(), "ns/")] = partition.FromMask(td.GPUs[0].Topology, c.Root.Mask)
	}
	return out
}

// specs are the CDI spec files in the driver's directory.
func (td *testDriver) specs(t *testing.T) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(td.Paths.CDIDir, "*"))
	return names
}

// mpsRunning makes td's MPS daemon seem to run: its pid file names this
// process.
func (td *testDriver) mpsRunning(t *testing.T) {
	t.Helper()
	pipe := td.Paths.MPS.PipeDir()
	os.MkdirAll(pipe, 0o700)
	if err := os.WriteFile(filepath.Join(pipe, "nvidia-cuda-mps-control.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kubelet is a fake kubelet's client of the plugin's two sockets.
type kubelet struct {
	reg registerapi.RegistrationClient
	dra drapb.DRAPluginClient
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// serve starts the plugin for td with its sockets s and returns a kubelet
// connected to them, and a function that stops it.
func serve(t *testing.T, td *testDriver, s dra.Sockets) (*kubelet, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := dra.Serve(ctx, td.Driver, s)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop := func() { h.Stop(); cancel() }
	t.Cleanup(stop)
	return &kubelet{
		reg: registerapi.NewRegistrationClient(dial(t, filepath.Join(s.RegistrarDir, dra.DriverName+"-reg.sock"))),
		dra: drapb.NewDRAPluginClient(dial(t, filepath.Join(s.PluginDir, "dra.sock"))),
	}, stop
}

// unprepare has the kubelet unprepare claims, and checks that each went
// and that nothing of them is left on the node.
func (k *kubelet) unprepare(ctx context.Context, t *testing.T, td *testDriver, claims ...*resourceapi.ResourceClaim) {
	t.Helper()
	var refs []*drapb.Claim
	for _, c := range claims {
		refs = append(refs, claimRef(c))
	}
	un, err := k.dra.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: refs})
	if err != nil {
		t.Fatal(err)
	}
	for uid, r := range un.Claims {
		if r.Error != "" {
			t.Errorf("unprepare %s: %s", uid, r.Error)
		}
	}
	if len(td.reserved(t)) != 0 || len(td.specs(t)) != 0 {
		t.Errorf("left after unprepare: %v %v", td.reserved(t), td.specs(t))
	}
}

func claimRef(c *resourceapi.ResourceClaim) *drapb.Claim {
	return &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}
}

func capacity(d resourceapi.Device) int64 {
	q := d.Capacity[dra.CapacityTPCs].Value
	return q.Value()
}
