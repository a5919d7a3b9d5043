// The real node's processes for TestRealNode: containerd with its CRI
// plugin and a kubelet, each of its own in the test's directory, and what
// they leave on the host put back.

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeBin is where make node puts containerd, its runc shim and ctr.
func nodeBin() string { return buildDir("CARVE_NODE_BIN", "node") }

// runc is Debian's runc (apt-get install runc), the runtime containerd's
// shim runs the containers with.
const runc = "/usr/sbin/runc"

// nodeAvailable says why this machine cannot run a real node for the
// test, or nil: it needs root, runc, the binaries make kube and make node
// build, and ldd (for the image of a dynamically linked program).
func nodeAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("a node's kubelet and containerd run as root, and this test does not")
	}
	if _, err := os.Stat(runc); err != nil {
		return fmt.Errorf("no runc (apt-get install runc): %w", err)
	}
	for _, b := range []string{filepath.Join(kubeBin(), "kubelet"), filepath.Join(nodeBin(), "containerd"),
		filepath.Join(nodeBin(), "containerd-shim-runc-v2"), filepath.Join(nodeBin(), "ctr")} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s not built (make kube node): %w", b, err)
		}
	}
	if _, err := exec.LookPath("ldd"); err != nil {
		return fmt.Errorf("no ldd, to find a program's libraries for its image: %w", err)
	}
	// the kubelet empties the device plugins' directory and takes its
	// socket, which on a machine that is a node would be its own kubelet's
	// (a socket nobody answers on is one an earlier test left)
	if c, err := net.Dial("unix", kubeletSocket); err == nil {
		c.Close()
		return fmt.Errorf("a kubelet serves %s: this machine is a node, which this test's kubelet would disturb", kubeletSocket)
	}
	return nil
}

// kubeletSocket is where a kubelet serves device plugins: a path of the
// host's, not of the test's root directory.
const kubeletSocket = "/var/lib/kubelet/device-plugins/kubelet.sock"

// kernelTunables are the sysctls a kubelet sets on its host at start
// (protectKernelDefaults off): the test puts back what they were.
var kernelTunables = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// keepKernelTunables restores kernelTunables when the test ends.
func keepKernelTunables(t *testing.T) {
	t.Helper()
	was := map[string][]byte{}
	for _, k := range kernelTunables {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			was[k] = b
		}
	}
	t.Cleanup(func() {
		for k, b := range was {
			if now, _ := os.ReadFile("/proc/sys/" + k); !bytes.Equal(now, b) {
				if err := os.WriteFile("/proc/sys/"+k, b, 0o644); err != nil {
					t.Errorf("putting back %s: %v", k, err)
				}
			}
		}
	})
}

// containerd is a containerd of its own (root, state and socket in dir)
// with its CRI plugin for the kubelet: runc through the runc shim, the
// cgroupfs driver, overlayfs, CDI specs from cdiDir, the pause image
// sandbox, no CNI (the test's pods are on the host network; its
// configuration directory is empty), runc's state in dir too.
type containerd struct {
	dir    string
	socket string
}

func startContainerd(t *testing.T, cp *controlPlane, dir, cdiDir, sandbox string) *containerd {
	t.Helper()
	os.MkdirAll(dir, 0o700)
	c := &containerd{dir: dir, socket: filepath.Join(dir, "containerd.sock")}
	config := filepath.Join(dir, "containerd.toml")
	os.WriteFile(config, []byte(fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins.'io.containerd.internal.v1.opt']
  path = %[4]q
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[5]q
[plugins.'io.containerd.cri.v1.runtime']
  # no OOM score below containerd's own: where root lacks CAP_SYS_RESOURCE
  # (a sandboxed machine) runc fails to lower it
  restrict_oom_score_adj = true
  cdi_spec_dirs = [%[6]q]
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    conf_dir = %[8]q
    bin_dirs = [%[8]q]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[7]q
        Root = %[9]q
        SystemdCgroup = false
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.socket, filepath.Join(dir, "opt"), sandbox, cdiDir, runc,
		filepath.Join(dir, "cni"), filepath.Join(dir, "runc"))), 0o600)
	bin, _ := filepath.Abs(nodeBin())
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH")) // where containerd finds its shim
	cp.startAt(t, dir, filepath.Join(bin, "containerd"), env, "--config", config)
	// containerd's own end leaves its shims and their containers: they go
	// first (the test's pods are gone by then unless it failed), then
	// whatever is still mounted under dir
	t.Cleanup(func() { c.cleanup(t) })
	if err := waitFor(30*time.Second, func() error { _, err := c.ctr("version"); return err }); err != nil {
		t.Fatalf("containerd does not answer: %v", err)
	}
	return c
}

// ctr runs ctr against c in the CRI's namespace.
func (c *containerd) ctr(args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(nodeBin(), "ctr"), append([]string{"--address", c.socket, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// importImage imports an image archive (a docker-archive or OCI tar).
func (c *containerd) importImage(t *testing.T, archive string) {
	t.Helper()
	if _, err := c.ctr("images", "import", archive); err != nil {
		t.Fatal(err)
	}
}

// cleanup kills and deletes what runs in containerd, and unmounts what is
// left under its directory.
func (c *containerd) cleanup(t *testing.T) {
	if out, err := c.ctr("tasks", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(out) {
			c.ctr("tasks", "delete", "--force", id)
		}
	}
	mountsUnder(t, c.dir)
}

// mountsUnder unmounts (lazily, deepest first) every mount under dir.
func mountsUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var under []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			under = append(under, fields[4])
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	for _, m := range under {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m, err)
		}
	}
}

// kubeletProc is a kubelet of node, its root directory in dir, against
// the control plane (as its admin) and containerd c: cgroup v1 allowed and
// the cgroupfs driver (a machine without systemd), swap allowed, its
// server on loopback, its pods' logs in dir/logs.
type kubeletProc struct {
	root string // --root-dir: plugins_registry and plugins are in it
	logs string
}

func startKubelet(t *testing.T, cp *controlPlane, dir string, c *containerd) *kubeletProc {
	t.Helper()
	os.MkdirAll(dir, 0o700)
	k := &kubeletProc{root: filepath.Join(dir, "root"), logs: filepath.Join(dir, "logs")}
	config := filepath.Join(dir, "kubelet.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://%s
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
podLogsDir: %q
volumePluginDir: %q
resolvConf: ""
localStorageCapacityIsolation: false
evictionHard: {memory.available: "0%%", nodefs.available: "0%%", imagefs.available: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerNode: true
`, c.socket, freePort(t), freePort(t), k.logs, filepath.Join(dir, "volume-plugins"))), 0o600)
	keepKernelTunables(t)
	// cleanups run last first: the mounts under its root go once the
	// kubelet, stopped by startAt's cleanup, can make no more
	t.Cleanup(func() { mountsUnder(t, k.root) })
	cp.startAt(t, dir, filepath.Join(kubeBin(), "kubelet"), nil, "--config", config, "--kubeconfig", cp.kubeconfig,
		"--root-dir", k.root, "--cert-dir", filepath.Join(dir, "pki"), "--hostname-override", node, "--node-ip", "127.0.0.1", "--v", "2")
	return k
}

// waitFor calls f until it returns nil or d has passed, and returns its
// last error then.
func waitFor(d time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
