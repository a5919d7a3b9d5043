// Package charttest renders the repository's chart for tests, installed as
// the README says: release carve-dra in carve-system, on the Kubernetes
// version the end-to-end API server runs; it decodes what the chart renders,
// and the example manifests, strictly, and holds the values that change
// each of its options.
package charttest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	serjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/carve-gpu/carve/internal/chart"
)

// Root is the module's root directory: the first directory upward from
// the working directory (a test's, its package's) that holds go.mod, or
// the working directory where none does.
func Root() string {
	start, _ := os.Getwd()
	for dir := start; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return start
		}
		dir = up
	}
}

// Dir is the chart's directory, deploy/helm/carve-dra of the module.
func Dir() string { return filepath.Join(Root(), "deploy/helm/carve-dra") }

// Release is how the tests install the chart.
var Release = chart.Release{Name: "carve-dra", Namespace: "carve-system", KubeVersion: "v1.37.2"}

// Render renders the chart for Release with values over its defaults.
func Render(t testing.TB, values map[string]any) []chart.Manifest {
	t.Helper()
	ms, err := chart.Render(Dir(), Release, values)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// Containers is every container of the chart rendered with values.
func Containers(t testing.TB, values map[string]any) []chart.Container {
	t.Helper()
	cs, err := chart.Containers(Render(t, values))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var strict = serjson.NewSerializerWithOptions(serjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, serjson.SerializerOptions{Yaml: true, Strict: true})

// Decode decodes one YAML document of a kind client-go knows, strictly
// (an unknown field is an error).
func Decode(doc []byte) (runtime.Object, error) {
	obj, _, err := strict.Decode(doc, nil, nil)
	return obj, err
}

// Objects are the chart's objects rendered with values, decoded strictly
// where client-go knows their kind; others (a ServiceMonitor, cert-manager's)
// come as Unstructured.
func Objects(t testing.TB, values map[string]any) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, m := range Render(t, values) {
		obj, err := Decode([]byte(m.YAML))
		if runtime.IsNotRegisteredError(err) {
			u := &unstructured.Unstructured{}
			if err = yaml.UnmarshalStrict([]byte(m.YAML), &u.Object); err == nil {
				obj = u
			}
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", m.Template, err, m.YAML)
			continue
		}
		out = append(out, obj)
	}
	return out
}

// Examples are the objects of the example claims and pods
// (deploy/kubernetes/examples), every document of their YAML files decoded
// strictly.
func Examples(t testing.TB) []runtime.Object {
	t.Helper()
	dir := filepath.Join(Root(), "deploy/kubernetes/examples")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	var out []runtime.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			obj, err := Decode(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
				continue
			}
			out = append(out, obj)
		}
	}
	return out
}

// Named is the object of type T named name among objs.
func Named[T interface {
	runtime.Object
	GetName() string
}](t testing.TB, objs []runtime.Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if x, ok := o.(T); ok && x.GetName() == name {
			return x
		}
	}
	var zero T
	t.Fatalf("no %T named %s", zero, name)
	return zero
}

// Set builds values from "a.b.c" paths, as helm install --set does.
func Set(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m, keys := out, strings.Split(kv[i].(string), ".")
		for _, k := range keys[:len(keys)-1] {
			if _, ok := m[k]; !ok {
				m[k] = map[string]any{}
			}
			m = m[k].(map[string]any)
		}
		m[keys[len(keys)-1]] = kv[i+1]
	}
	return out
}

// NonDefault are values that turn on, off or change each of the chart's
// options.
var NonDefault = Set(
	"image.repository", "registry.example.com/carve", "image.tag", "v1.2.3", "image.pullPolicy", "Always",
	"imagePullSecrets", []any{map[string]any{"name": "registry"}},
	"nodeSelector", map[string]any{"gpu": "h100"}, "runtimeClassName", "nvidia",
	"affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "gpu", "operator": "Exists"}}}}}}},
	"plugin.extraArgs", []any{"--xid-taint-for=1h"}, "plugin.resources.limits", map[string]any{"memory": "256Mi"},
	"plugin.nodeDir", "/run/carve-node",
	"daemon.updateStrategy", map[string]any{"type": "RollingUpdate"}, "daemon.interval", "2s",
	"mps.enabled", false,
	"metrics.port", 9500, "metrics.serviceMonitor.enabled", true, "metrics.serviceMonitor.labels", map[string]any{"release": "prometheus"},
	"deviceClass.config", map[string]any{"class": "ls", "connections": 4},
	"webhook.failurePolicy", "Ignore", "webhook.replicas", 1, "webhook.certManager.enabled", true,
	"webhook.affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}}}}}}},
	"health.xid", false,
)
