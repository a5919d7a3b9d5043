// Container images for TestRealNode, built here from files of this
// machine: a program and the libraries it links, in one layer.

package e2e

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeImage writes an image archive (docker-archive, as ctr imports it)
// of ref for this machine's platform: one layer of files, each by its
// path in the image, from its path here (executables all), and the
// program its containers run by default, entrypoint.
func writeImage(t *testing.T, archive, ref string, files map[string]string, entrypoint ...string) {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	dirs := map[string]bool{}
	for _, at := range slices.Sorted(maps.Keys(files)) {
		var parents []string
		for d := path.Dir(at); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		slices.Reverse(parents)
		for _, d := range parents {
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755})
		}
		b, err := os.ReadFile(files[at])
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: at[1:], Mode: 0o755, Size: int64(len(b))})
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = entrypoint
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(archive, tag, img); err != nil {
		t.Fatal(err)
	}
}

// lddPath is a library's path in ldd's output.
var lddPath = regexp.MustCompile(`(?m)^\s*(?:\S+ => )?(/\S+) \(0x`)

// withLibs adds to files (by path in the image) the libraries each needs,
// and those that also (programs or libraries not in the image) need, by
// ldd, at their paths here.
func withLibs(t *testing.T, files map[string]string, also ...string) map[string]string {
	t.Helper()
	out := maps.Clone(files)
	for _, from := range append(slices.Collect(maps.Values(files)), also...) {
		b, err := exec.Command("ldd", from).CombinedOutput()
		if err != nil && strings.Contains(string(b), "not a dynamic executable") {
			continue // static (a busybox sh, say): it needs none
		}
		if err != nil {
			t.Fatalf("ldd %s: %v: %s", from, err, b)
		}
		for _, m := range lddPath.FindAllStringSubmatch(string(b), -1) {
			out[filepath.Clean(m[1])] = m[1]
		}
	}
	return out
}
