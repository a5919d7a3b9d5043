// The chart installed on a real API server (make kube), with its defaults
// and then with every option changed, as helm install and helm upgrade
// would.

package e2e

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/carve-gpu/carve/internal/chart/charttest"
)

// install applies what the chart renders with values to the API server,
// in its namespace (made if need be), as helm install and helm upgrade
// would: server-side apply, so that installing again with other values
// updates the objects. The kinds the API server does not serve (a
// ServiceMonitor without the Prometheus Operator's CRDs, cert-manager's
// without cert-manager) are left out and returned.
func (cp *controlPlane) install(t *testing.T, values map[string]any) (skipped []string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: charttest.Release.Namespace}}
	if _, err := cp.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err != nil {
		cp.create(t, ns)
	}
	groups, err := restmapper.GetAPIGroupResources(cp.client.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(cp.config)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range charttest.Render(t, values) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.YAML), &u.Object); err != nil {
			t.Fatalf("%s: %v", m.Template, err)
		}
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			skipped = append(skipped, gvk.Kind)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			r = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		b, _ := u.MarshalJSON()
		force := true
		if _, err := r.Patch(ctx, u.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "helm", Force: &force}); err != nil {
			t.Errorf("applying %s %s (%s): %v", gvk.Kind, u.GetName(), m.Template, err)
		}
	}
	return skipped
}

// TestChartInstall: what the chart renders, with its defaults and then with
// every option changed (as helm upgrade would apply it), is accepted by a
// real API server (make kube); only the kinds of APIs it does not serve
// (the Prometheus Operator's, cert-manager's) are left out. The webhook's
// pod is one the restricted Pod Security Standard admits.
func TestChartInstall(t *testing.T) {
	cp := startControlPlane(t)
	if skipped := cp.install(t, nil); len(skipped) != 0 {
		t.Errorf("with its defaults, the chart's %q were not applied", skipped)
	}
	// the webhook's pod, as its Deployment makes it, in a namespace that
	// enforces the restricted standard (a dry run: no kubelet runs it)
	ctx := context.Background()
	cp.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}})
	deploy := charttest.Named[*appsv1.Deployment](t, charttest.Objects(t, nil), "carve-dra-webhook")
	cp.create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "restricted", Name: deploy.Spec.Template.Spec.ServiceAccountName}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "restricted", Name: "webhook"}, Spec: deploy.Spec.Template.Spec}
	if _, err := cp.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the webhook's pod under the restricted Pod Security Standard: %v", err)
	}
	skipped := cp.install(t, charttest.NonDefault)
	slices.Sort(skipped)
	if want := []string{"Certificate", "Issuer", "ServiceMonitor"}; !slices.Equal(skipped, want) {
		t.Errorf("with every option changed, %q were left out, want %q", skipped, want)
	}
	ds, err := cp.client.AppsV1().DaemonSets(charttest.Release.Namespace).Get(ctx, "carve-daemon", metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Spec.HostPID || ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("carve daemon's DaemonSet after the second install: %v", err)
	}
}
