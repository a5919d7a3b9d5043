// Tests of the plugin's node service (plugin.go) through a fake kubelet:
// registration, and claims prepared and unprepared over its gRPC socket.

package dra

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

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

// serve starts the plugin for td with its sockets in a temporary directory
// and returns a kubelet connected to them, and a function that stops it.
func serve(t *testing.T, td *testDriver, s Sockets) (*kubelet, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := Serve(ctx, td.Driver, s)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop := func() { h.Stop(); cancel() }
	t.Cleanup(stop)
	return &kubelet{
		reg: registerapi.NewRegistrationClient(dial(t, filepath.Join(s.RegistrarDir, DriverName+"-reg.sock"))),
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

// TestNodeService: a fake kubelet registers the plugin, prepares claims
// over its gRPC socket (the plugin reads them from the API), sees the
// node's GPU published in a ResourceSlice, and after a restart of the
// plugin unprepares what the first one prepared. deploy/kubernetes's
// ClusterRole allows every API call it made.
func TestNodeService(t *testing.T) {
	td := newTestDriver(t)
	dir := t.TempDir()
	s := Sockets{PluginDir: filepath.Join(dir, "plugins", DriverName), RegistrarDir: filepath.Join(dir, "registry")}
	if _, err := Serve(context.Background(), td.Driver, s); err == nil || !strings.Contains(err.Error(), "plugin registry") {
		t.Errorf("without the kubelet's registry: %v", err)
	}
	os.MkdirAll(s.RegistrarDir, 0o750)
	k, stop := serve(t, td, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	info, err := k.reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.DRAPlugin || info.Name != DriverName || info.Endpoint != filepath.Join(s.PluginDir, "dra.sock") {
		t.Errorf("plugin info %+v", info)
	}

	a, b, c := td.claim(t, "a", 30), td.claim(t, "b", 30), td.claim(t, "c", 30)
	resp, err := k.dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claimRef(a), claimRef(b), claimRef(c)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*resourceapi.ResourceClaim{a, b} {
		r := resp.Claims[string(cl.UID)]
		if r == nil || r.Error != "" || len(r.Devices) != 1 || r.Devices[0].CdiDeviceIds[0] != CDIDeviceID(string(cl.UID)) ||
			r.Devices[0].RequestNames[0] != "gpu" {
			t.Errorf("claim %s: %+v", cl.Name, r)
		}
	}
	if r := resp.Claims[string(c.UID)]; r == nil || !strings.Contains(r.Error, "30 TPCs asked for, 6 of 66 are free") {
		t.Errorf("a claim beyond the GPU: %+v", r)
	}

	deadline := time.Now().Add(10 * time.Second)
	var slices *resourceapi.ResourceSliceList
	for time.Now().Before(deadline) {
		if slices, err = td.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{}); err == nil && len(slices.Items) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if slices == nil || len(slices.Items) != 1 {
		t.Fatalf("ResourceSlices %v %v", slices, err)
	}
	sl := slices.Items[0].Spec
	if sl.Driver != DriverName || sl.NodeName == nil || *sl.NodeName != node || sl.Pool.Name != node || len(sl.Devices) != 1 ||
		capacity(sl.Devices[0]) != 66 || !*sl.Devices[0].AllowMultipleAllocations {
		t.Errorf("published slice %+v", sl)
	}

	stop()
	restarted := newTestDriver(t)
	restarted.Paths = td.Paths
	restarted.client = td.client
	restarted.Client = td.client
	k, _ = serve(t, restarted, s)
	k.unprepare(ctx, t, td, a, b, c)
	allowed(t, clusterRole(t), td.client.Actions())
}

func capacity(d resourceapi.Device) int64 {
	q := d.Capacity[CapacityTPCs].Value
	return q.Value()
}
