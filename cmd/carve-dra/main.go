// carve-dra is carve's DRA kubelet plugin: it runs on each GPU node (see
// deploy/helm/carve-dra), publishes the node's GPUs with their TPCs, and
// prepares the claims the scheduler allocates from them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/daemon"
	"github.com/carve-gpu/carve/internal/dra"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/preload"
)

var version = "dev"

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "carve-dra:", err)
		os.Exit(1)
	}
}

type options struct {
	node, kubeconfig, shim, carve string
	paths                         dra.Paths
	sockets                       dra.Sockets
	health                        bool
	healthConfig                  dra.HealthConfig
}

func newRootCmd() *cobra.Command {
	var o options
	c := &cobra.Command{
		Use:   "carve-dra",
		Short: "carve's DRA kubelet plugin: TPC partitions of the node's GPUs for pods",
		Long: `carve-dra publishes each GPU of the node in a ResourceSlice, as one device of
driver gpu.carve.dev whose live TPCs are a consumable capacity ("tpcs"), so
that the scheduler hands out any number of TPCs of one GPU to any number of
claims. When the kubelet prepares a claim, carve-dra reserves that many
TPCs on the GPU (packed into few GPCs, atomic with every other placement on
the node) and writes a CDI spec that preloads libcarve.so into the claim's
containers, mounts the claim's directory of control blocks, and joins them
to carve's MPS daemon where it runs. A claim's opaque config (apiVersion
gpu.carve.dev/v1alpha1, kind ClaimConfig) sets its class (ls, be, none) and
policy; see deploy/kubernetes/README.md. carve-dra webhook checks those
configs when claims are created.

It keeps its state in carve's runtime directory (claims/UID/), so it can
be restarted at any time. Where the node directory exists and root made
it ($CARVE_NODE_DIR, else ` + ctl.NodeDirDefault + `; sudo carve node init), it
places claims around the TPCs and memory of the users' tenants there
(reading their blocks, never writing them) and publishes each claim
there, root's (` + ctl.PublishedDir + `/UID), so that users' carve run keeps off
the claims' TPCs and counts their memory.`,
		Version:       version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return run(ctx, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.node, "node-name", os.Getenv("NODE_NAME"), "this node's name ($NODE_NAME)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: the pod's service account)")
	f.StringVar(&o.paths.RuntimeDir, "runtime-dir", "/run/carve", "carve's runtime directory on the node (claims, control blocks, the shim)")
	f.StringVar(&o.paths.CDIDir, "cdi-dir", "/var/run/cdi", "where the container runtime reads CDI specs")
	f.StringVar(&o.shim, "shim", "", "libcarve.so to install on the node (default: beside this binary)")
	f.StringVar(&o.carve, "carve", "", "the carve binary, which discovers GPU topologies (default: beside this binary)")
	f.StringVar(&o.paths.MPS.Root, "mps-dir", mps.Default().Root, "carve's MPS daemon's directory ($CARVE_MPS_DIR)")
	f.StringVar(&o.paths.MPSShm, "mps-shm", "", "the directory MPS has as /dev/shm, mounted as /dev/shm into MPS clients (empty: MPS uses the node's)")
	f.StringVar(&o.paths.GPUDevice, "gpu-cdi-device", "nvidia.com/gpu={index}",
		"CDI device of the NVIDIA Container Toolkit that gives a container the GPU ({index}, {uuid}); empty for none")
	f.StringVar(&o.sockets.PluginDir, "plugin-dir", "/var/lib/kubelet/plugins/"+dra.DriverName, "directory of the plugin's socket")
	f.StringVar(&o.sockets.RegistrarDir, "registrar-dir", "/var/lib/kubelet/plugins_registry", "the kubelet's plugin registry")
	f.BoolVar(&o.health, "health", true, "watch the GPUs' health: taint (NoSchedule) a GPU the NVIDIA driver no longer lists or that reported a fatal Xid, and report it to the kubelet")
	f.StringVar(&o.healthConfig.ProcRoot, "proc", "/proc", "where the NVIDIA driver's driver/nvidia/gpus is")
	f.IntSliceVar(&o.healthConfig.Fatal, "fatal-xids", dra.FatalXids, "the Xids that taint a GPU")
	f.DurationVar(&o.healthConfig.XidHold, "xid-taint-for", 0, "how long a fatal Xid taints its GPU after the report (0: until carve-dra restarts)")
	f.DurationVar(&o.healthConfig.Interval, "health-interval", 5*time.Second, "how often the GPUs' health is checked")
	c.AddCommand(newWebhookCmd())
	return c
}

func run(ctx context.Context, o options) error {
	if o.node == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}
	if err := daemon.CheckInterval("--health-interval", o.healthConfig.Interval); err != nil {
		return err
	}
	if h := o.healthConfig.XidHold; h < 0 || h > 30*24*time.Hour {
		return fmt.Errorf("--xid-taint-for %v: want 0 (until carve-dra restarts) to 720h", h)
	}
	os.Setenv("CARVE_RUNTIME_DIR", o.paths.RuntimeDir)
	dir, err := ctl.Dir()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if o.carve == "" {
		o.carve = filepath.Join(filepath.Dir(exe), "carve")
	}
	lib, err := preload.Find(o.shim)
	if err != nil {
		return err
	}
	if o.paths.Shim, err = dra.InstallShim(lib, dir); err != nil {
		return err
	}
	client, err := kubeClient(o.kubeconfig)
	if err != nil {
		return err
	}
	gpus, err := dra.FindGPUs(o.carve)
	if err != nil {
		return err
	}
	d := &dra.Driver{Node: o.node, GPUs: gpus, Paths: o.paths, Client: client}
	if o.health {
		d.Health = dra.NewHealth(gpus, o.healthConfig)
	}
	h, err := dra.Serve(ctx, d, o.sockets)
	if err != nil {
		return err
	}
	for _, g := range gpus {
		klog.InfoS("Publishing", "device", g.DeviceName(), "uuid", g.Topology.UUID, "tpcs", len(g.Topology.TPCs))
	}
	<-ctx.Done()
	h.Stop()
	return nil
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("the API server's address and credentials: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}
