// Tests of the Helm chart (deploy/helm/carve-dra) the driver installs
// with: it renders, with its defaults and with every option changed,
// objects that decode strictly and hang together, and a real API server
// accepts them.

package dra

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/carve-gpu/carve/internal/chart/charttest"
	"github.com/carve-gpu/carve/internal/ctl"
)

// releaseNamespace is where the tests install the chart (charttest.Release).
var releaseNamespace = charttest.Release.Namespace

// chartObjects are the chart's objects rendered with values, decoded
// strictly (an unknown field is an error) where client-go knows their kind;
// others (a ServiceMonitor, cert-manager's) come as Unstructured.
func chartObjects(t *testing.T, values map[string]any) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, m := range charttest.Render(t, values) {
		obj, err := decodeStrict([]byte(m.YAML))
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

// set builds values from "a.b.c" paths, as helm install --set does.
func helmSet(kv ...any) map[string]any {
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

// install applies what the chart renders with values to the API server,
// in its namespace (made if need be), as helm install and helm upgrade
// would: server-side apply, so that installing again with other values
// updates the objects. The kinds the API server does not serve (a
// ServiceMonitor without the Prometheus Operator's CRDs, cert-manager's
// without cert-manager) are left out and returned.
func (cp *controlPlane) install(t *testing.T, values map[string]any) (skipped []string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}
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

// nonDefault are values that turn on, off or change each of the chart's
// options.
var nonDefault = helmSet(
	"image.repository", "registry.example.com/carve", "image.tag", "v1.2.3", "image.pullPolicy", "Always",
	"imagePullSecrets", []any{map[string]any{"name": "registry"}},
	"nodeSelector", map[string]any{"gpu": "h100"}, "runtimeClassName", "nvidia",
	"affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "gpu", "operator": "Exists"}}}}}}},
	"plugin.extraArgs", []any{"--xid-taint-for=1h"}, "plugin.resources.limits", map[string]any{"memory": "256Mi"},
	"daemon.updateStrategy", map[string]any{"type": "RollingUpdate"}, "daemon.interval", "2s",
	"mps.enabled", false,
	"metrics.port", 9500, "metrics.serviceMonitor.enabled", true, "metrics.serviceMonitor.labels", map[string]any{"release": "prometheus"},
	"deviceClass.config", map[string]any{"class": "ls", "connections": 4},
	"webhook.failurePolicy", "Ignore", "webhook.replicas", 1, "webhook.certManager.enabled", true,
	"webhook.affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}}}}}}},
	"health.xid", false,
)

// TestChart: the chart renders, with its defaults and with every option
// changed, objects that decode strictly and hang together: the webhook's
// certificate is for its Service's name and signed by the CA the API server
// is given; the webhook's two replicas prefer different nodes and a
// PodDisruptionBudget keeps one of them through a drain (none with one
// replica, which it would keep from being drained); the metrics Service
// (and ServiceMonitor) select the daemons' port; the DeviceClass's config
// is one carve-dra accepts; turning MPS off takes the privileged init
// container, hostPID and MPS's flags away.
func TestChart(t *testing.T) {
	objs := chartObjects(t, nil)
	web := named[*admissionv1.ValidatingWebhookConfiguration](t, objs, "carve-dra-webhook")
	svc := named[*corev1.Service](t, objs, "carve-dra-webhook")
	hook := web.Webhooks[0]
	if ref := hook.ClientConfig.Service; ref == nil || ref.Name != svc.Name || ref.Namespace != svc.Namespace || *ref.Path != WebhookPath {
		t.Errorf("the webhook calls %+v, the Service is %s/%s", ref, svc.Namespace, svc.Name)
	}
	if *hook.FailurePolicy != admissionv1.Fail || len(hook.MatchConditions) != 1 {
		t.Errorf("failurePolicy %s, matchConditions %+v", *hook.FailurePolicy, hook.MatchConditions)
	}
	secret := named[*corev1.Secret](t, objs, "carve-dra-webhook-tls")
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(hook.ClientConfig.CABundle) {
		t.Fatal("the webhook's caBundle holds no certificate")
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("the webhook's Secret holds no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: svc.Name + "." + svc.Namespace + ".svc"}); err != nil {
		t.Errorf("the webhook's certificate, as the API server checks it: %v", err)
	}
	deploy := named[*appsv1.Deployment](t, objs, "carve-dra-webhook")
	if v := deploy.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != secret.Name {
		t.Errorf("the webhook's volumes %+v", v)
	}
	// a drain leaves a webhook pod answering: two replicas, on different
	// nodes where there are, and a budget that keeps one
	pdb := named[*policyv1.PodDisruptionBudget](t, objs, "carve-dra-webhook")
	if *deploy.Spec.Replicas != 2 || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 ||
		!selects(pdb.Spec.Selector.MatchLabels, deploy.Spec.Template.Labels) {
		t.Errorf("the webhook's %d replicas, its PodDisruptionBudget %+v", *deploy.Spec.Replicas, pdb.Spec)
	}
	if a := deploy.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname ||
		!selects(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, deploy.Spec.Template.Labels) {
		t.Errorf("the webhook's replicas are not spread over nodes: %+v", a)
	}
	metrics := named[*corev1.Service](t, objs, "carve-metrics")
	daemon := named[*appsv1.DaemonSet](t, objs, "carve-daemon")
	if !selects(metrics.Spec.Selector, daemon.Spec.Template.Labels) || metrics.Spec.Ports[0].TargetPort.StrVal != daemon.Spec.Template.Spec.Containers[0].Ports[0].Name {
		t.Errorf("the metrics Service %+v does not select the daemons' port", metrics.Spec)
	}
	if c := daemon.Spec.Template.Spec.Containers[0].Command; slices.Contains(c, "--no-mps") || len(daemon.Spec.Template.Spec.InitContainers) != 1 {
		t.Errorf("with MPS on, carve daemon runs %q", c)
	}
	if s := daemon.Spec.UpdateStrategy.Type; s != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("carve daemon (MPS) updates by %s: a rollout would stop MPS", s)
	}

	objs = chartObjects(t, nonDefault)
	daemon = named[*appsv1.DaemonSet](t, objs, "carve-daemon")
	plugin := named[*appsv1.DaemonSet](t, objs, "carve-dra")
	for _, ds := range []*appsv1.DaemonSet{daemon, plugin} {
		p := ds.Spec.Template.Spec
		if p.HostPID || len(p.InitContainers) != 0 || p.Containers[0].Image != "registry.example.com/carve:v1.2.3" ||
			p.NodeSelector["gpu"] != "h100" || p.Affinity == nil || *p.RuntimeClassName != "nvidia" || p.ImagePullSecrets[0].Name != "registry" {
			t.Errorf("DaemonSet %s with MPS off and other values: %+v", ds.Name, p)
		}
	}
	if c := daemon.Spec.Template.Spec.Containers[0].Command; !slices.Contains(c, "--no-mps") || !slices.Contains(c, "--listen=0.0.0.0:9500") {
		t.Errorf("with MPS off, carve daemon runs %q", c)
	}
	if c := plugin.Spec.Template.Spec.Containers[0].Command; !slices.Contains(c, "--xid-taint-for=1h") || slices.ContainsFunc(c, func(a string) bool { return strings.HasPrefix(a, "--mps-shm") }) {
		t.Errorf("with MPS off and an extra flag, carve-dra runs %q", c)
	}
	var kinds []string
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			kinds = append(kinds, u.GetAPIVersion()+" "+u.GetKind())
		}
	}
	slices.Sort(kinds)
	if want := []string{"cert-manager.io/v1 Certificate", "cert-manager.io/v1 Issuer", "monitoring.coreos.com/v1 ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Errorf("objects of other APIs: %q, want %q", kinds, want)
	}
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "ServiceMonitor" {
			sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
			eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
			if m := named[*corev1.Service](t, objs, "carve-metrics"); !selects(sel, m.Labels) || len(eps) != 1 || eps[0].(map[string]any)["port"] != m.Spec.Ports[0].Name {
				t.Errorf("the ServiceMonitor %v does not select the metrics Service %v", u.Object["spec"], m.Labels)
			}
		}
	}
	if pdbs := all[*policyv1.PodDisruptionBudget](objs); len(pdbs) != 0 {
		t.Errorf("with one webhook replica, a PodDisruptionBudget (it would block every drain of its node): %+v", pdbs[0].Spec)
	}
	if a := named[*appsv1.Deployment](t, objs, "carve-dra-webhook").Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity != nil || a.NodeAffinity == nil {
		t.Errorf("the webhook's affinity, set: %+v", a)
	}
	web = named[*admissionv1.ValidatingWebhookConfiguration](t, objs, "carve-dra-webhook")
	if h := web.Webhooks[0]; *h.FailurePolicy != admissionv1.Ignore || len(h.ClientConfig.CABundle) != 0 ||
		web.Annotations["cert-manager.io/inject-ca-from"] != releaseNamespace+"/carve-dra-webhook" {
		t.Errorf("the webhook with cert-manager: %+v", web)
	}
	class := one[*resourceapi.DeviceClass](t, objs)
	var configs []resourceapi.DeviceAllocationConfiguration
	for _, c := range class.Spec.Config {
		configs = append(configs, resourceapi.DeviceAllocationConfiguration{Source: resourceapi.AllocationConfigSourceClass, DeviceConfiguration: c.DeviceConfiguration})
	}
	if s, err := RequestSettings(configs, "gpu"); err != nil || s.Connections != 4 || s.Policy.Class != ctl.ClassLS {
		t.Errorf("the DeviceClass's config %+v: %+v, %v", class.Spec.Config, s, err)
	}
}

// selects reports whether a selector's labels are all in labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
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
	deploy := named[*appsv1.Deployment](t, chartObjects(t, nil), "carve-dra-webhook")
	cp.create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "restricted", Name: deploy.Spec.Template.Spec.ServiceAccountName}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "restricted", Name: "webhook"}, Spec: deploy.Spec.Template.Spec}
	if _, err := cp.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the webhook's pod under the restricted Pod Security Standard: %v", err)
	}
	skipped := cp.install(t, nonDefault)
	slices.Sort(skipped)
	if want := []string{"Certificate", "Issuer", "ServiceMonitor"}; !slices.Equal(skipped, want) {
		t.Errorf("with every option changed, %q were left out, want %q", skipped, want)
	}
	ds, err := cp.client.AppsV1().DaemonSets(releaseNamespace).Get(ctx, "carve-daemon", metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Spec.HostPID || ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("carve daemon's DaemonSet after the second install: %v", err)
	}
}
