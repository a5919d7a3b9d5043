// Package chart renders carve's Helm chart (deploy/helm/carve-dra) with
// Helm's own library, as helm template and helm install do, so that tests
// check and apply what users install.
package chart

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// Release is what an install names: the release, its namespace, and the
// Kubernetes version it installs on (as the API server reports it, e.g.
// "v1.37.2"; the chart's kubeVersion must allow it).
type Release struct {
	Name, Namespace, KubeVersion string
}

// Manifest is one rendered object: the template it came from and its YAML.
type Manifest struct {
	Template string
	YAML     string
}

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// Render renders the chart in dir for r with values over the chart's
// values.yaml (nested maps, as --set builds them), and returns its objects
// in the order of their templates' names and of the documents in each.
// Documents with nothing but comments and NOTES.txt are left out.
func Render(dir string, r Release, values map[string]any) ([]Manifest, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	kv, err := common.ParseKubeVersion(r.KubeVersion)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *kv
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return nil, fmt.Errorf("chart %s needs Kubernetes %s, not %s", ch.Name(), c, kv)
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if path.Base(name) != "NOTES.txt" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []Manifest
	for _, name := range names {
		for _, doc := range separator.Split(files[name], -1) {
			if hasContent(doc) {
				out = append(out, Manifest{Template: name, YAML: doc})
			}
		}
	}
	return out, nil
}

// hasContent reports whether a YAML document has anything but comments.
func hasContent(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}
