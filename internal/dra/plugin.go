// Starting the plugin (Serve: registering with the kubelet and publishing
// the node's GPUs), finding the node's GPUs and installing the shim.

package dra

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/discover"
)

// Sockets are where the plugin meets the kubelet.
type Sockets struct {
	PluginDir    string // the plugin's own socket (dra.sock), /var/lib/kubelet/plugins/gpu.carve.dev
	RegistrarDir string // the kubelet's plugin registry, /var/lib/kubelet/plugins_registry
}

// Serve registers d with the kubelet, answers its calls, and publishes the
// node's GPUs, until ctx ends or the returned helper is stopped. It first
// removes what an earlier plugin may have left half done and publishes
// the claims in the node directory (Sweep), which it publishes again
// every PublishEvery. Where d watches its GPUs' health, it republishes
// them on each change, until ctx ends.
func Serve(ctx context.Context, d *Driver, s Sockets) (*kubeletplugin.Helper, error) {
	if err := d.Sweep(); err != nil {
		return nil, err
	}
	if st, err := os.Stat(s.RegistrarDir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("the kubelet's plugin registry %s is not there (is the kubelet's directory mounted into the plugin?)", s.RegistrarDir)
	}
	if err := os.MkdirAll(s.PluginDir, 0o750); err != nil {
		return nil, err
	}
	h, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.KubeClient(d.Client),
		kubeletplugin.NodeName(d.Node),
		kubeletplugin.PluginDataDirectoryPath(s.PluginDir),
		kubeletplugin.RegistrarDirectoryPath(s.RegistrarDir),
		kubeletplugin.HealthService(d.Health != nil),
	)
	if err != nil {
		return nil, fmt.Errorf("starting the kubelet plugin: %w", err)
	}
	if d.Health != nil {
		d.Health.Check(ctx)
	}
	if err := h.PublishResources(ctx, d.resources()); err != nil {
		h.Stop()
		return nil, fmt.Errorf("publishing the node's GPUs: %w", err)
	}
	if d.Health != nil {
		go d.Health.Run(ctx, func(ctx context.Context) error { return h.PublishResources(ctx, d.resources()) })
	}
	go d.republish(ctx)
	return h, nil
}

// PublishEvery is how often the plugin brings the claims published in the
// node directory up to date (state.publish): a node directory made after
// it started, or a copy removed or spoiled since, is mended within it.
var PublishEvery = time.Minute

// republish runs state.publish every PublishEvery, until ctx ends.
func (d *Driver) republish(ctx context.Context) {
	t := time.NewTicker(PublishEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.state().publish()
		}
	}
}

// FindGPUs returns the node's GPUs with their topologies: from carve's
// cache, or discovered by carve (the binary at carvePath) in a child
// process, as carve topo does.
func FindGPUs(carvePath string) ([]GPU, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	var gpus []GPU
	for i := range n {
		t, _, err := discover.Load(discover.LoadOptions{Ordinal: i, Discover: discover.ChildDiscoverer(carvePath, discover.DiscoverCommand)})
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		gpus = append(gpus, GPU{Index: i, Topology: t})
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("no GPU on this node")
	}
	return gpus, nil
}

// InstallShim copies libcarve.so from src to lib/ in the runtime directory,
// where containers' mounts find it on the node, and returns its path. It
// replaces an older copy by renaming over it: containers running with the
// old one keep it.
func InstallShim(src, runtimeDir string) (string, error) {
	dst := filepath.Join(runtimeDir, "lib", "libcarve.so")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("shim: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".libcarve-*.so")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return "", fmt.Errorf("installing the shim at %s: %w", dst, err)
	}
	return dst, nil
}
