package topo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/cuda"
)

// CacheDir is where topologies are kept: $CARVE_CACHE_DIR, else the user's
// cache directory + /carve.
func CacheDir() (string, error) {
	if d := os.Getenv("CARVE_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set CARVE_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "carve"), nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// CachePath is the cache file for one GPU under one driver.
func CachePath(dir, uuid, driver string) string {
	return filepath.Join(dir, "topo-"+unsafeChars.ReplaceAllString(uuid+"_"+driver, "_")+".json")
}

// ReadCache returns the cached topology, or (nil, nil) if there is none.
func ReadCache(path string) (*Topology, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("cached %s: %w (rerun with --refresh)", path, err)
	}
	return t, nil
}

// WriteCache stores t atomically.
func WriteCache(path string, t *Topology) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadOptions say where to find or how to make a topology.
type LoadOptions struct {
	Ordinal int
	Refresh bool
	// Discover runs discovery in a separate process and returns its JSON;
	// see ChildDiscoverer.
	Discover func(ctx context.Context, ordinal int) ([]byte, error)
	Timeout  time.Duration
}

// Load returns the topology of GPU ordinal: from the cache when it holds
// one for this GPU's UUID and driver, else freshly discovered and cached.
// The bool says whether it came from the cache.
func Load(opt LoadOptions) (*Topology, bool, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, false, err
	}
	if uuid, driver := cuda.SoleGPU(), cuda.ProcVersion(); !opt.Refresh && opt.Ordinal == 0 && uuid != "" && driver != "" {
		if t, err := ReadCache(CachePath(dir, uuid, driver)); t != nil || err != nil {
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
	path := CachePath(dir, uuid, driver)
	if !opt.Refresh {
		if t, err := ReadCache(path); t != nil || err != nil {
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
	t, err := Parse(b)
	if err != nil {
		return nil, false, err
	}
	if t.UUID != uuid {
		return nil, false, fmt.Errorf("discovery ran on %s, expected %s", t.UUID, uuid)
	}
	return t, false, WriteCache(path, t)
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

// FindCached returns the cached topology whose live TPC bits are live, the
// GPU a control block was made for; nil if none is cached.
func FindCached(live Mask) (*Topology, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "topo-*.json"))
	for _, p := range paths {
		t, err := ReadCache(p)
		if err == nil && t != nil && t.Live() == live {
			return t, nil
		}
	}
	return nil, nil
}
