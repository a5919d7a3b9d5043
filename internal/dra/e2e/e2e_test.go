// carve-dra against a real control plane (etcd, kube-apiserver and
// kube-scheduler, make kube): starting one, and TestEndToEnd, the plugin
// publishing, the scheduler allocating and a fake kubelet preparing.

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/carve-gpu/carve/internal/chart/charttest"
	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/dra"
	"github.com/carve-gpu/carve/internal/place"
)

// kubeBin is where make kube puts kube-apiserver, kube-scheduler and etcd.
func kubeBin() string { return buildDir("CARVE_KUBE_BIN", "kube") }

// buildDir is the folder of the module's build/ that make fills with name,
// or the one the environment variable env names.
func buildDir(env, name string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	return filepath.Join(charttest.Root(), "build", name)
}

// controlPlane is etcd, kube-apiserver and kube-scheduler on loopback
// ports, for one test.
type controlPlane struct {
	config     *rest.Config
	client     *kubernetes.Clientset
	kubeconfig string // the admin's
	logs       []string
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs name from kubeBin with args until the test ends.
func (cp *controlPlane) start(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cp.startAt(t, dir, filepath.Join(kubeBin(), name), nil, args...)
}

// startAt runs the program bin with args (and env, if not nil) until the
// test ends; its output goes to a log file that a failing test prints.
func (cp *controlPlane) startAt(t *testing.T, dir, bin string, env []string, args ...string) {
	t.Helper()
	name := filepath.Base(bin)
	log := filepath.Join(dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	// its own process group (signals to the test's are not its), ended with the test
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cp.logs = append(cp.logs, log)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s's log ends:\n%s", name, b)
		}
	})
}

// startControlPlane starts etcd, then the API server (RBAC, a token for
// an admin, service-account keys), then the scheduler.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(kubeBin(), b)); err != nil {
			t.Skipf("%s not built (make kube): %v", b, err)
		}
	}
	dir := t.TempDir()
	cp := &controlPlane{}
	etcd := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cp.start(t, dir, "etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", etcd, "--advertise-client-urls", etcd,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), "--log-level", "warn")

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	token := rand.Text()
	os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600)
	port := freePort(t)
	cp.start(t, dir, "kube-apiserver", "--etcd-servers", etcd, "--cert-dir", filepath.Join(dir, "certs"),
		"--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1",
		"--service-account-key-file", keyFile, "--service-account-signing-key-file", keyFile,
		"--service-account-issuer", "https://kubernetes.default.svc", "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC", "--allow-privileged=true") // as kubeadm sets it
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", port), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	cp.config = cfg
	if cp.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, err := cp.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(body) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server is not ready after 60 s: %v %s", err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	kubeconfig := cp.kubeconfig
	os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: e2e, context: {cluster: e2e, user: admin}}]
current-context: e2e
`, cfg.Host, token)), 0o600)
	cp.start(t, dir, "kube-scheduler", "--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig, "--leader-elect=false", "--bind-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(freePort(t)))
	return cp
}

// create makes obj in the API (typed, by its kind).
func (cp *controlPlane) create(t *testing.T, obj runtime.Object) {
	t.Helper()
	ctx := context.Background()
	var err error
	c := cp.client
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = c.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.ServiceAccount:
		_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *resourceapi.DeviceClass:
		_, err = c.ResourceV1().DeviceClasses().Create(ctx, o, metav1.CreateOptions{})
	case *resourceapi.ResourceClaim:
		_, err = c.ResourceV1().ResourceClaims(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Pod:
		_, err = c.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRole:
		_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
	case *admissionv1.ValidatingAdmissionPolicy:
		_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
	case *appsv1.DaemonSet:
		_, err = c.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		t.Fatalf("no way to create a %T", obj)
	}
	if err != nil {
		t.Fatalf("creating %T: %v", obj, err)
	}
}

// deploy installs the chart, without its admission webhook, which no pod
// serves here (a claim carve-dra refuses must get past admission to reach
// it; webhook_test.go refuses it there), and the default namespace's
// service account (no controller manager makes it).
func (cp *controlPlane) deploy(t *testing.T) {
	t.Helper()
	cp.install(t, charttest.Set("webhook.enabled", false))
	cp.create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}})
}

// TestEndToEnd: against a real API server and scheduler (make kube),
// the chart's objects are accepted; the plugin, with its own
// rights (its service account's token bound to a pod on the node, under
// rbac.yaml), publishes the
// recorded H100 as a ResourceSlice the API validates, its TPCs and its
// memory; the scheduler allocates TPCs and memory to the example claims
// (an LS claim of 16 TPCs and 16Gi, a BE claim of 0 and 24Gi, a plain one
// of 22 and 16Gi) and to one of 1 TPC and 1Gi with a config carve-dra
// refuses, and leaves the pod of a fifth (44 more TPCs, 16Gi) pending,
// since 83 TPCs are more than the GPU's 66, and that of a sixth (4 TPCs,
// 32Gi) pending, since 89Gi are more than its 79.2Gi, while a seventh (4
// TPCs, 16Gi) is allocated; carve-dra's service account may write its own
// node's slices and claims' status only; a fake kubelet then prepares the allocated claims
// over the plugin's socket, the plugin reads them from the API, gives
// each its memory (less its context's reserve: there is no MPS here) as
// its limit, and writes their status (the refused one's says why), and
// unprepares them.
func TestEndToEnd(t *testing.T) {
	cp := startControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cp.deploy(t)

	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	n, err := cp.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceCPU: resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi")}
	n.Status.Allocatable = n.Status.Capacity
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if n, err = cp.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = nil // not-ready, from admission: no node controller takes it off
	if _, err := cp.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// the plugin runs with its own rights: its service account's token
	// bound to a pod on the node, as the DaemonSet's pods get, under
	// rbac.yaml's roles and admission policy
	plugin := pluginClient(ctx, t, cp)
	td := newTestDriver(t)
	td.Client = plugin
	dir := t.TempDir()
	s := dra.Sockets{PluginDir: filepath.Join(dir, "plugin"), RegistrarDir: filepath.Join(dir, "registry")}
	os.MkdirAll(s.RegistrarDir, 0o750)
	k, _ := serve(t, td, s)
	for {
		l, err := cp.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) == 1 {
			if d := l.Items[0].Spec.Devices; len(d) != 1 || capacity(d[0]) != 66 || memoryCapacity(d[0]) != int64(td.GPUs[0].Topology.MemoryBytes) {
				t.Fatalf("published %+v", l.Items[0].Spec)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no ResourceSlice published: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// the example templates' claims, by the templates' names, and one of
	// 1 TPC whose config carve-dra refuses (a BE knob on an LS claim)
	claims := map[string]*resourceapi.ResourceClaim{}
	for _, o := range charttest.Examples(t) {
		if tmpl, ok := o.(*resourceapi.ResourceClaimTemplate); ok {
			claims[tmpl.Name] = &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: tmpl.Name}, Spec: tmpl.Spec.Spec}
		}
	}
	want := map[string]int64{"ls": 16, "be": 0, "tpcs-22": 22, "bad": 1, "mem-16": 4}
	wantMem := map[string]int64{"ls": 16 << 30, "be": 24 << 30, "tpcs-22": 16 << 30, "bad": 1 << 30, "mem-16": 16 << 30}
	order := []string{"ls", "be", "tpcs-22", "bad", "tpcs-44", "mem-32", "mem-16"}
	if len(claims) != 4 || claims["ls"] == nil || claims["tpcs-44"] == nil {
		t.Fatalf("the examples' claim templates are not those this test knows: %v", slices.Collect(maps.Keys(claims)))
	}
	for name, q := range map[string]string{"ls": "16Gi", "be": "24Gi", "tpcs-22": "16Gi", "tpcs-44": "16Gi"} {
		if got := claims[name].Spec.Devices.Requests[0].Exactly.Capacity.Requests[dra.CapacityMemory]; got.String() != q {
			t.Fatalf("the example claim %s asks for memory %q, this test knows it as %s", name, got.String(), q)
		}
	}
	bad := claims["ls"].DeepCopy()
	bad.Name = "bad"
	bad.Spec.Devices.Requests[0].Exactly.Capacity.Requests[dra.CapacityTPCs] = resource.MustParse("1")
	bad.Spec.Devices.Requests[0].Exactly.Capacity.Requests[dra.CapacityMemory] = resource.MustParse("1Gi")
	bad.Spec.Devices.Config[0].Opaque.Parameters.Raw = []byte(`{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig", "class": "ls", "inflight": 4}`)
	bad.Spec.Devices.Config[0].Opaque.Parameters.Object = nil
	claims["bad"] = bad
	for name, mem := range map[string]string{"mem-32": "32Gi", "mem-16": "16Gi"} { // few TPCs, much memory
		c := claims["tpcs-22"].DeepCopy()
		c.Name = name
		c.Spec.Devices.Requests[0].Exactly.Capacity.Requests[dra.CapacityTPCs] = resource.MustParse("4")
		c.Spec.Devices.Requests[0].Exactly.Capacity.Requests[dra.CapacityMemory] = resource.MustParse(mem)
		claims[name] = c
	}

	// one pod at a time, so that the scheduler meets them in this order:
	// it allocates the first four (39 of 66 TPCs, 57 of 79.2Gi), leaves
	// tpcs-44 (TPCs) and mem-32 (memory), and allocates mem-16
	var allocated []*resourceapi.ResourceClaim
	var badClaim *resourceapi.ResourceClaim
	for _, name := range order {
		c := claims[name]
		cp.create(t, c)
		cp.create(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-" + name},
			Spec: corev1.PodSpec{
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &c.Name}},
				Containers: []corev1.Container{{Name: "ctr", Image: "none",
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			},
		})
		tpcs, ok := want[name]
		if !ok {
			t.Logf("pod-%s: %s", name, waitPending(ctx, t, cp.client, "pod-"+name))
			continue
		}
		got := waitClaim(ctx, t, cp.client, name)
		r := got.Status.Allocation.Devices.Results
		if len(r) != 1 || r[0].Device != "gpu-0" || r[0].Pool != node || consumed(r[0]) != tpcs || consumedMemory(r[0]) != wantMem[name] {
			t.Errorf("claim %s allocated %+v, want %d TPCs and %d bytes of gpu-0", name, r, tpcs, wantMem[name])
		}
		if name == "bad" {
			badClaim = got
		} else {
			allocated = append(allocated, got)
		}
	}

	ownNodeOnly(ctx, t, cp, plugin)

	refs := []*drapb.Claim{claimRef(badClaim)}
	for _, c := range allocated {
		refs = append(refs, claimRef(c))
	}
	resp, err := k.dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: refs})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Claims[string(badClaim.UID)]; r == nil || !strings.Contains(r.Error, "inflight") {
		t.Errorf("prepare of a claim with a BE knob on an LS claim: %+v", r)
	}
	if cur, err := cp.client.ResourceV1().ResourceClaims("default").Get(ctx, "bad", metav1.GetOptions{}); err != nil ||
		len(cur.Status.Devices) != 1 || len(cur.Status.Devices[0].Conditions) == 0 ||
		cur.Status.Devices[0].Conditions[0].Reason != dra.ReasonFailed || !strings.Contains(cur.Status.Devices[0].Conditions[0].Message, "inflight") {
		t.Errorf("the refused claim's status: %+v %v", cur.Status.Devices, err)
	}
	for _, c := range allocated {
		if r := resp.Claims[string(c.UID)]; r == nil || r.Error != "" || len(r.Devices) != 1 {
			t.Errorf("prepare %s: %+v", c.Name, r)
		}
		cur, err := cp.client.ResourceV1().ResourceClaims("default").Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil || len(cur.Status.Devices) != 1 || len(cur.Status.Devices[0].Conditions) == 0 ||
			cur.Status.Devices[0].Conditions[0].Status != metav1.ConditionTrue {
			t.Errorf("claim %s's status after prepare: %+v %v", c.Name, cur.Status.Devices, err)
		}
	}
	got := td.reserved(t)
	if len(got["default/tpcs-22"]) != 22 || len(got["default/ls"]) != 16 || len(got["default/be"]) != 66 || len(got["default/mem-16"]) != 4 ||
		len(got["default/tpcs-22"].Intersect(got["default/ls"])) != 0 {
		t.Errorf("reserved %v", got)
	}
	roots, _, _ := ctl.Claims(td.Paths.RuntimeDir)
	for _, c := range roots {
		name := strings.TrimPrefix(c.Name(), "default/")
		if want := uint64(wantMem[name]) - place.ContextReserve; c.Root.Memory.Limit != want {
			t.Errorf("claim %s's limit is %d, want %d", name, c.Root.Memory.Limit, want)
		}
	}
	k.unprepare(ctx, t, td, allocated...)
}

// pluginClient is a client of carve-dra's service account with a token
// bound to a pod on node (as the DaemonSet's pods get): the token names the
// node.
func pluginClient(ctx context.Context, t *testing.T, cp *controlPlane) *kubernetes.Clientset {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "carve-system", Name: "carve-dra-on-a"},
		Spec: corev1.PodSpec{ServiceAccountName: "carve-dra", NodeName: node, Containers: []corev1.Container{{Name: "plugin", Image: "none"}}}}
	pod, err := cp.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cp.client.CoreV1().ServiceAccounts("carve-system").CreateToken(ctx, "carve-dra", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.config)
	cfg.BearerToken = tok.Status.Token
	plugin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plugin
}

// ownNodeOnly: carve-dra with its token bound to a pod on node-a (plugin)
// may write node-a's ResourceSlices and no other node's, nor another
// driver's on node-a (rbac.yaml's admission policy), may not write the
// status of a claim allocated on another node (the API server's
// associated-node check), and may not read what carve-dra never needs.
func ownNodeOnly(ctx context.Context, t *testing.T, cp *controlPlane, plugin *kubernetes.Clientset) {
	t.Helper()
	slice := func(nodeName string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: dra.DriverName, NodeName: &nodeName, Pool: resourceapi.ResourcePool{Name: nodeName, ResourceSliceCount: 1}}}
	}
	// the API server compiles a new admission policy in the background, a
	// while after it is created (longer on a loaded host): wait until it
	// refuses what it must, or fail
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		other, err := plugin.ResourceV1().ResourceSlices().Create(ctx, slice("node-b"), metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "may change only that node's ResourceSlices") {
			break
		}
		if err == nil {
			if err := cp.client.ResourceV1().ResourceSlices().Delete(ctx, other.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chart's ResourceSlice admission policy is not in force 30 s after it was made: carve-dra on %s writing node-b's slice: %v", node, err)
		}
	}
	made, err := plugin.ResourceV1().ResourceSlices().Create(ctx, slice(node), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("carve-dra on %s writing its own node's slice: %v", node, err)
	} else if err := plugin.ResourceV1().ResourceSlices().Delete(ctx, made.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		// (not found: the plugin's own slice controller, which owns that pool, removed it first)
		t.Errorf("carve-dra on %s deleting its own node's slice: %v", node, err)
	}
	if _, err := plugin.ResourceV1().ResourceSlices().Create(ctx, slice("node-b"), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "may change only that node's ResourceSlices") {
		t.Errorf("carve-dra on %s writing node-b's slice: %v", node, err)
	}
	// another driver's slice on carve-dra's node: neither written nor
	// deleted (made by the admin, as that driver's plugin would)
	foreign := slice(node)
	foreign.Spec.Driver = "gpu.example.com"
	notCarve := "may change only the ResourceSlices of driver " + dra.DriverName
	if _, err := plugin.ResourceV1().ResourceSlices().Create(ctx, foreign, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), notCarve) {
		t.Errorf("carve-dra on %s writing another driver's slice on its node: %v", node, err)
	}
	foreign, err = cp.client.ResourceV1().ResourceSlices().Create(ctx, foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := plugin.ResourceV1().ResourceSlices().Delete(ctx, foreign.Name, metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), notCarve) {
		t.Errorf("carve-dra on %s deleting another driver's slice on its node: %v", node, err)
	}
	if err := cp.client.ResourceV1().ResourceSlices().Delete(ctx, foreign.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// a claim allocated on node-b (by the admin, as a scheduler would)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "on-b"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: dra.DriverName}}}}}}
	claim, err = cp.client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: dra.DriverName, Pool: "node-b", Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}}}}}}}
	if claim, err = cp.client.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: dra.DriverName, Pool: "node-b", Device: "gpu-0"}}
	if _, err := plugin.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `cannot arbitrary-node:update resource "resourceclaims/driver"`) {
		t.Errorf("carve-dra on %s writing the status of a claim on node-b: %v", node, err)
	}
	if _, err := plugin.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("carve-dra listing secrets: %v", err)
	}
}

// waitClaim waits for the scheduler to allocate claim name.
func waitClaim(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) *resourceapi.ResourceClaim {
	t.Helper()
	for {
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && cl.Status.Allocation != nil {
			return cl
		}
		if ctx.Err() != nil {
			t.Fatalf("claim %s was not allocated: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPending waits for the scheduler to find pod unschedulable, and
// returns why.
func waitPending(ctx context.Context, t *testing.T, c kubernetes.Interface, pod string) string {
	t.Helper()
	for {
		p, err := c.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
		if err == nil {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s was bound to %s", pod, p.Spec.NodeName)
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
					return cond.Message
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s was not found unschedulable: %v", pod, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func consumed(r resourceapi.DeviceRequestAllocationResult) int64 {
	q, ok := r.ConsumedCapacity[dra.CapacityTPCs]
	if !ok {
		return -1
	}
	return q.Value()
}

func consumedMemory(r resourceapi.DeviceRequestAllocationResult) int64 {
	q, ok := r.ConsumedCapacity[dra.CapacityMemory]
	if !ok {
		return -1
	}
	return q.Value()
}

func memoryCapacity(d resourceapi.Device) int64 {
	q := d.Capacity[dra.CapacityMemory].Value
	return q.Value()
}
