// TestRealNode: carve-dra on a real node (make kube node's kubelet and
// containerd, Debian's runc), its pod's container running the shim.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/dra"
	"github.com/carve-gpu/carve/internal/shimtest"
)

// The images the test builds and imports into containerd.
const (
	pauseImage = "carve.test/pause:1"
	nodeImage  = "carve.test/node:1"
)

// nodeScript is the container's program: the shell (under the injected
// preload too) says what the claim's CDI device injected, then the shim's
// test driver (a dynamically linked stand-in for a CUDA program, on the
// fake libcuda) answers meminfo, the memory its processes see (the
// shim's limit, from the claim's block), and stays, for the test to see
// its block.
const nodeScript = `echo "preload $LD_PRELOAD"
if [ -e "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid" ]; then echo "mps $CUDA_MPS_PIPE_DIRECTORY mounted"; fi
echo "limit $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
{ echo meminfo; LD_PRELOAD= exec /bin/sleep 1000000; } | /carve/driver`

// TestRealNode: a real node (make kube node's kubelet and containerd,
// Debian's runc) beside the control plane, with carve-dra registered
// with its kubelet over the plugin registry and writing its claims' CDI
// specs where containerd reads them. A pod on the host network with a
// claim of 4 TPCs and 1Gi (under MPS: a fake daemon's pid file) runs the
// shim's test driver from an image built here: the preload loads (its
// control block appears in the claim's directory), the MPS pipe
// directory is mounted where the environment says, and the memory the
// program sees is the claim's limit; the claim's status is carve's, as
// the plugin wrote it with its own token; deleting the pod unprepares the
// claim and its files go.
func TestRealNode(t *testing.T) {
	if err := nodeAvailable(); err != nil {
		t.Skip(err)
	}
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what); start = time.Now() }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	cp := startControlPlane(t)
	cp.deploy(t)
	phase("control plane up")

	b := shimtest.Build(t)
	dir := t.TempDir()
	pause := filepath.Join(dir, "pause")
	if out, err := exec.Command(cc(), "-static", "-O2", "-Wall", "-o", pause, "testdata/pause.c").CombinedOutput(); err != nil {
		t.Fatalf("building the pause program (static, needs libc6-dev): %v: %s", err, out)
	}
	writeImage(t, filepath.Join(dir, "pause.tar"), pauseImage, map[string]string{"/pause": pause}, "/pause")
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	sleep, _ := exec.LookPath("sleep")
	writeImage(t, filepath.Join(dir, "node.tar"), nodeImage, withLibs(t, map[string]string{
		"/bin/sh": sh, "/bin/sleep": sleep, "/carve/driver": b.Driver, "/carve/libcuda.so.1": b.Fake}, b.Shim), "/bin/sh")
	phase("shim and images built")

	td := newTestDriver(t)
	td.Paths.Shim = b.Shim
	td.Paths.GPUDevice = "" // no NVIDIA CDI devices here
	td.mpsRunning(t)
	os.MkdirAll(td.Paths.CDIDir, 0o755)
	c := startContainerd(t, cp, filepath.Join(dir, "containerd"), td.Paths.CDIDir, pauseImage)
	c.importImage(t, filepath.Join(dir, "pause.tar"))
	c.importImage(t, filepath.Join(dir, "node.tar"))
	phase("containerd up, images imported")

	k := startKubelet(t, cp, filepath.Join(dir, "kubelet"), c)
	registry := filepath.Join(k.root, "plugins_registry")
	if err := waitFor(60*time.Second, func() error {
		if _, err := cp.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := os.Stat(registry)
		return err
	}); err != nil {
		t.Fatalf("the kubelet registered no node %s with a plugin registry: %v", node, err)
	}
	phase("kubelet registered its node")

	td.Client = pluginClient(ctx, t, cp)
	serve(t, td, dra.Sockets{PluginDir: filepath.Join(k.root, "plugins", dra.DriverName), RegistrarDir: registry})
	if err := waitFor(60*time.Second, func() error {
		l, err := cp.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) != 1 {
			err = fmt.Errorf("%d ResourceSlices", len(l.Items))
		}
		return err
	}); err != nil {
		t.Fatalf("carve-dra published no slice: %v", err)
	}
	phase("carve-dra published its slice")

	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "real"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: dra.DriverName, Capacity: &resourceapi.CapacityRequirements{
				Requests: map[resourceapi.QualifiedName]resource.Quantity{dra.CapacityTPCs: resource.MustParse("4"), dra.CapacityMemory: resource.MustParse("1Gi")}}}}}}}}
	cp.create(t, claim)
	no, grace := false, int64(1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "real"},
		Spec: corev1.PodSpec{
			HostNetwork: true, AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace,
			RestartPolicy: corev1.RestartPolicyNever,
			// the node's not-ready taint stays: no controller takes it off
			Tolerations:    []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}},
			Containers: []corev1.Container{{Name: "driver", Image: nodeImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", nodeScript}, Env: []corev1.EnvVar{{Name: "CARVE_LIBCUDA", Value: "/carve/libcuda.so.1"}},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		}}
	cp.create(t, pod)
	if err := waitFor(90*time.Second, func() error {
		p, err := cp.client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s, conditions %+v, containers %+v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		}
		pod = p
		return nil
	}); err != nil {
		t.Fatalf("the pod does not run: %v\n%s", err, events(ctx, cp))
	}
	phase("the pod runs")

	// the container's output, from the kubelet's log of it
	limit := uint64(1 << 30)
	want := []string{"preload " + dra.ContainerShim, "mps " + dra.ContainerPipe + " mounted", "limit 0=1G", "ready",
		fmt.Sprintf("meminfo %d %d rc 0", limit, limit)}
	logFile := filepath.Join(k.logs, fmt.Sprintf("default_real_%s", pod.UID), "driver", "0.log")
	var lines []string
	if err := waitFor(30*time.Second, func() error {
		lines = containerLog(logFile)
		for _, w := range want {
			if !containsLine(lines, w) {
				return fmt.Errorf("no line %q", w)
			}
		}
		return nil
	}); err != nil {
		t.Errorf("the container's output: %v; it printed:\n%s", err, strings.Join(lines, "\n"))
	} else {
		t.Logf("the container printed:\n%s", strings.Join(lines, "\n"))
	}
	claims, _, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil || len(claims) != 1 {
		t.Errorf("claims on the node: %d, %v; want the pod's", len(claims), err)
	} else if len(claims[0].Procs) == 0 || claims[0].Root.Memory.Limit != limit {
		t.Errorf("the claim's blocks: %d of processes, a limit of %d; want its container's processes, and its limit %d",
			len(claims[0].Procs), claims[0].Root.Memory.Limit, limit)
	} else {
		t.Logf("the claim's directory has the blocks of %d of its container's processes", len(claims[0].Procs))
	}
	phase("the preload loaded in the container, with the claim's limit")

	cur, err := cp.client.ResourceV1().ResourceClaims("default").Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st dra.Status
	if len(cur.Status.Devices) != 1 || cur.Status.Devices[0].Data == nil || json.Unmarshal(cur.Status.Devices[0].Data.Raw, &st) != nil ||
		st.Count != 4 || !st.MPS || st.Memory != limit {
		t.Errorf("the claim's status: %+v", cur.Status.Devices)
	}
	y, _ := yaml.Marshal(cur.Status)
	t.Logf("the claim's status, as carve-dra wrote it:\n%s", y)

	if err := cp.client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(60*time.Second, func() error {
		if _, err := cp.client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the pod is still there: %v", err)
		}
		if claims, _, _ := ctl.Claims(td.Paths.RuntimeDir); len(claims) != 0 {
			return fmt.Errorf("claims still reserved: %+v", claims)
		}
		if specs := td.specs(t); len(specs) != 0 {
			return fmt.Errorf("CDI specs left: %v", specs)
		}
		return nil
	}); err != nil {
		t.Fatalf("after the pod's deletion: %v\n%s", err, events(ctx, cp))
	}
	if dirs, _ := filepath.Glob(filepath.Join(td.Paths.RuntimeDir, "claims", "*")); len(dirs) != 0 {
		t.Errorf("the claim's files are left: %v", dirs)
	}
	phase("deleting the pod unprepared the claim")
}

// cc is the C compiler ($CC, default cc), as shimtest uses.
func cc() string {
	if c := os.Getenv("CC"); c != "" {
		return c
	}
	return "cc"
}

// containerLog is what a container printed, by lines, from the kubelet's
// log file of it (CRI's format: time, stream, tag, the line).
func containerLog(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(l, " ", 4); len(f) == 4 {
			out = append(out, f[3])
		}
	}
	return out
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// events are the API's events, for a failing test.
func events(ctx context.Context, cp *controlPlane) string {
	l, err := cp.client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range l.Items {
		fmt.Fprintf(&b, "%s %s/%s: %s %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}
