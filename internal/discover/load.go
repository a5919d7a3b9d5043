// Package discover finds a real GPU's topology: it probes the device with
// carve's SM-recording kernel under single-bit TPC masks (in a child process
// outside MPS), and keeps the result in topo's cache by GPU UUID and driver.
// The discovery algorithm and the topology's types live in internal/topo,
// which loads no driver.
package discover

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/topo"
)

// LoadOptions say where to find or how to make a topology.
type LoadOptions struct {
	Ordinal int
	Refresh bool
	// Discover runs discovery in a separate process and returns its JSON;
	// see ChildDiscoverer.
	Discover func(ctx context.Context, ordinal int) ([]byte, error)
	Timeout  time.Duration
	// Memory is the GPU's memory in bytes, for a cached topology recorded
	// before carve kept it (default: the driver's cuDeviceTotalMem).
	Memory func(ordinal int) (uint64, error)
}

// driverMemory is GPU ordinal's memory, from the driver.
func driverMemory(ordinal int) (uint64, error) {
	if err := cuda.Load(); err != nil {
		return 0, err
	}
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return 0, fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	return dev.TotalMem()
}

// readCache is the topology cached at path for GPU ordinal (nil: none).
// One cached before carve recorded the GPU's memory gets it now, and is
// written back with it, so that only its first load asks the driver.
func readCache(path string, ordinal int, memory func(int) (uint64, error)) (*topo.Topology, error) {
	t, err := topo.ReadCache(path)
	if t == nil || err != nil || t.MemoryBytes != 0 {
		return t, err
	}
	if memory == nil {
		memory = driverMemory
	}
	if t.MemoryBytes, err = memory(ordinal); err != nil {
		return nil, fmt.Errorf("the memory of GPU %d (its cached topology predates it): %w", ordinal, err)
	}
	return t, topo.WriteCache(path, t)
}

// Load returns the topology of GPU ordinal: from the cache when it holds
// one for this GPU's UUID and driver, else freshly discovered and cached.
// The bool says whether it came from the cache.
func Load(opt LoadOptions) (*topo.Topology, bool, error) {
	dir, err := topo.CacheDir()
	if err != nil {
		return nil, false, err
	}
	if uuid, driver := cuda.SoleGPU(), cuda.ProcVersion(); !opt.Refresh && opt.Ordinal == 0 && uuid != "" && driver != "" {
		if t, err := readCache(topo.CachePath(dir, uuid, driver), opt.Ordinal, opt.Memory); t != nil || err != nil {
			return t, true, err
		}
	}
	if err := cuda.Load(); err != nil {
		return nil, false, err
	}
	dev, err := cuda.GetDevice(opt.Ordinal)
	if err != nil {
		return nil, false, fmt.Errorf("GPU %d: %w", opt.Ordinal, err)
	}
	uuid, err := dev.UUID()
	if err != nil {
		return nil, false, err
	}
	driver := cuda.ProcVersion()
	if driver == "" {
		v, _ := cuda.DriverVersion()
		driver = fmt.Sprintf("cuda%d", v)
	}
	path := topo.CachePath(dir, uuid, driver)
	if !opt.Refresh {
		if t, err := readCache(path, opt.Ordinal, opt.Memory); t != nil || err != nil {
			return t, true, err
		}
	}
	timeout := opt.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, err := opt.Discover(ctx, opt.Ordinal)
	if err != nil {
		return nil, false, err
	}
	t, err := topo.Parse(b)
	if err != nil {
		return nil, false, err
	}
	if t.UUID != uuid {
		return nil, false, fmt.Errorf("discovery ran on %s, expected %s", t.UUID, uuid)
	}
	return t, false, topo.WriteCache(path, t)
}

// ChildDiscoverer runs `exe args... ` as a child that must print the
// topology as JSON. The child gets an empty MPS pipe directory, so that its
// context is made outside any MPS server (MPS virtualizes %smid), and no
// carve shim. It is killed if it outlives ctx.
func ChildDiscoverer(exe string, args ...string) func(context.Context, int) ([]byte, error) {
	return func(ctx context.Context, ordinal int) ([]byte, error) {
		empty, err := os.MkdirTemp("", "carve-nomps-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(empty)
		cmd := exec.CommandContext(ctx, exe, append(args, fmt.Sprintf("--device=%d", ordinal))...)
		cmd.Env = append(cleanEnv(os.Environ()), "CUDA_MPS_PIPE_DIRECTORY="+empty)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr
		cmd.WaitDelay = time.Second
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("topology discovery did not finish in time and was killed: %w", ctx.Err())
			}
			return nil, fmt.Errorf("topology discovery failed: %w", err)
		}
		return out.Bytes(), nil
	}
}

// cleanEnv drops what would partition or redirect the discovery process.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "LD_PRELOAD", k == "CUDA_MPS_PIPE_DIRECTORY", strings.HasPrefix(k, "CARVE_CTL"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

// DiscoverCommand is the hidden command of the carve binary that discovers
// a GPU's topology in a child process and prints it as JSON.
const DiscoverCommand = "__discover"

// Topology returns GPU ordinal's topology, from the cache or discovered in
// a child process of this carve binary (DiscoverCommand); the bool says
// whether it came from the cache.
func Topology(ordinal int, refresh bool) (*topo.Topology, bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, false, err
	}
	return Load(LoadOptions{Ordinal: ordinal, Refresh: refresh, Discover: ChildDiscoverer(exe, DiscoverCommand)})
}

// Count is how many GPUs CUDA sees: 1 without loading the driver where
// the machine has one GPU and CUDA_VISIBLE_DEVICES is unset (cuda.SoleGPU).
func Count() (int, error) {
	if cuda.SoleGPU() != "" {
		return 1, nil
	}
	if err := cuda.Load(); err != nil {
		return 0, err
	}
	return cuda.DeviceCount()
}

// Topologies returns the topology of each GPU CUDA sees, by ordinal, as
// Topology does, and whether each came from the cache.
func Topologies(refresh bool) ([]*topo.Topology, []bool, error) {
	n, err := Count()
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("CUDA sees no GPU")
	}
	var out []*topo.Topology
	var cached []bool
	for i := range n {
		t, c, err := Topology(i, refresh)
		if err != nil {
			return nil, nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		out, cached = append(out, t), append(cached, c)
	}
	return out, cached, nil
}
