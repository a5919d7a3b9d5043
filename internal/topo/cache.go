// The topology cache: a file per GPU and driver under CacheDir, read and
// written atomically, and the cached topology of a GPU found by UUID or by
// its live TPC bits.

package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// FindCachedGPU returns the cached topology of the GPU of uuid, the GPU a
// partition of a control block is on; with no UUID (a block of an older
// carve), FindCached's of live. nil if none is cached.
func FindCachedGPU(uuid string, live Enable) (*Topology, error) {
	if uuid == "" {
		return FindCached(live)
	}
	return findCached(func(t *Topology) bool { return strings.EqualFold(t.UUID, uuid) && t.Live() == live })
}

// FindCached returns the cached topology whose live TPC bits are live, the
// GPU a control block was made for; nil if none is cached.
func FindCached(live Enable) (*Topology, error) {
	return findCached(func(t *Topology) bool { return t.Live() == live })
}

// findCached returns the first cached topology that matches; nil if none.
func findCached(match func(*Topology) bool) (*Topology, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "topo-*.json"))
	for _, p := range paths {
		t, err := ReadCache(p)
		if err == nil && t != nil && match(t) {
			return t, nil
		}
	}
	return nil, nil
}
