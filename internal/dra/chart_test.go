// Tests of the Helm chart (deploy/helm/carve-dra) the driver installs
// with: it renders, with its defaults and with every option changed,
// objects that decode strictly and hang together, and a real API server
// accepts them.

package dra

import (
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carve-gpu/carve/internal/chart/charttest"
	"github.com/carve-gpu/carve/internal/ctl"
)

// TestChart: the chart renders, with its defaults and with every option
// changed, objects that decode strictly and hang together: the webhook's
// certificate is for its Service's name and signed by the CA the API server
// is given; the webhook's two replicas prefer different nodes and a
// PodDisruptionBudget keeps one of them through a drain (none with one
// replica, which it would keep from being drained); the metrics Service
// (and ServiceMonitor) select the daemons' port; the DeviceClass's config
// is one carve-dra accepts; turning MPS off takes the privileged init
// container, hostPID and MPS's flags away; plugin.nodeDir gives carve-dra
// and carve daemon the node directory, which they have none of by default.
func TestChart(t *testing.T) {
	objs := charttest.Objects(t, nil)
	for _, name := range []string{"carve-dra", "carve-daemon"} {
		p := charttest.Named[*appsv1.DaemonSet](t, objs, name).Spec.Template.Spec
		if slices.ContainsFunc(p.Volumes, func(v corev1.Volume) bool { return v.Name == "node-dir" }) ||
			slices.ContainsFunc(p.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "CARVE_NODE_DIR" }) {
			t.Errorf("%s is given a node directory by default: %+v", name, p)
		}
	}
	web := charttest.Named[*admissionv1.ValidatingWebhookConfiguration](t, objs, "carve-dra-webhook")
	svc := charttest.Named[*corev1.Service](t, objs, "carve-dra-webhook")
	hook := web.Webhooks[0]
	if ref := hook.ClientConfig.Service; ref == nil || ref.Name != svc.Name || ref.Namespace != svc.Namespace || *ref.Path != WebhookPath {
		t.Errorf("the webhook calls %+v, the Service is %s/%s", ref, svc.Namespace, svc.Name)
	}
	if *hook.FailurePolicy != admissionv1.Fail || len(hook.MatchConditions) != 1 {
		t.Errorf("failurePolicy %s, matchConditions %+v", *hook.FailurePolicy, hook.MatchConditions)
	}
	secret := charttest.Named[*corev1.Secret](t, objs, "carve-dra-webhook-tls")
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
	deploy := charttest.Named[*appsv1.Deployment](t, objs, "carve-dra-webhook")
	if v := deploy.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != secret.Name {
		t.Errorf("the webhook's volumes %+v", v)
	}
	// a drain leaves a webhook pod answering: two replicas, on different
	// nodes where there are, and a budget that keeps one
	pdb := charttest.Named[*policyv1.PodDisruptionBudget](t, objs, "carve-dra-webhook")
	if *deploy.Spec.Replicas != 2 || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 ||
		!selects(pdb.Spec.Selector.MatchLabels, deploy.Spec.Template.Labels) {
		t.Errorf("the webhook's %d replicas, its PodDisruptionBudget %+v", *deploy.Spec.Replicas, pdb.Spec)
	}
	if a := deploy.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname ||
		!selects(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, deploy.Spec.Template.Labels) {
		t.Errorf("the webhook's replicas are not spread over nodes: %+v", a)
	}
	metrics := charttest.Named[*corev1.Service](t, objs, "carve-metrics")
	daemon := charttest.Named[*appsv1.DaemonSet](t, objs, "carve-daemon")
	if !selects(metrics.Spec.Selector, daemon.Spec.Template.Labels) || metrics.Spec.Ports[0].TargetPort.StrVal != daemon.Spec.Template.Spec.Containers[0].Ports[0].Name {
		t.Errorf("the metrics Service %+v does not select the daemons' port", metrics.Spec)
	}
	if c := daemon.Spec.Template.Spec.Containers[0].Command; slices.Contains(c, "--no-mps") || len(daemon.Spec.Template.Spec.InitContainers) != 1 {
		t.Errorf("with MPS on, carve daemon runs %q", c)
	}
	if s := daemon.Spec.UpdateStrategy.Type; s != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("carve daemon (MPS) updates by %s: a rollout would stop MPS", s)
	}

	objs = charttest.Objects(t, charttest.NonDefault)
	daemon = charttest.Named[*appsv1.DaemonSet](t, objs, "carve-daemon")
	plugin := charttest.Named[*appsv1.DaemonSet](t, objs, "carve-dra")
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
	for _, ds := range []*appsv1.DaemonSet{daemon, plugin} {
		if !nodeDirMounted(ds, "/run/carve-node") {
			t.Errorf("with plugin.nodeDir, %s is not given the node directory: %+v", ds.Name, ds.Spec.Template.Spec)
		}
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
			if m := charttest.Named[*corev1.Service](t, objs, "carve-metrics"); !selects(sel, m.Labels) || len(eps) != 1 || eps[0].(map[string]any)["port"] != m.Spec.Ports[0].Name {
				t.Errorf("the ServiceMonitor %v does not select the metrics Service %v", u.Object["spec"], m.Labels)
			}
		}
	}
	if pdbs := all[*policyv1.PodDisruptionBudget](objs); len(pdbs) != 0 {
		t.Errorf("with one webhook replica, a PodDisruptionBudget (it would block every drain of its node): %+v", pdbs[0].Spec)
	}
	if a := charttest.Named[*appsv1.Deployment](t, objs, "carve-dra-webhook").Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity != nil || a.NodeAffinity == nil {
		t.Errorf("the webhook's affinity, set: %+v", a)
	}
	web = charttest.Named[*admissionv1.ValidatingWebhookConfiguration](t, objs, "carve-dra-webhook")
	if h := web.Webhooks[0]; *h.FailurePolicy != admissionv1.Ignore || len(h.ClientConfig.CABundle) != 0 ||
		web.Annotations["cert-manager.io/inject-ca-from"] != charttest.Release.Namespace+"/carve-dra-webhook" {
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

// nodeDirMounted says whether ds's first container has the node directory
// dir: CARVE_NODE_DIR names it, and it is the node's, mounted where it must
// exist (type Directory: carve node init makes it, never the kubelet).
func nodeDirMounted(ds *appsv1.DaemonSet, dir string) bool {
	p := ds.Spec.Template.Spec
	c := p.Containers[0]
	env := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CARVE_NODE_DIR" && e.Value == dir })
	mount := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "node-dir" && m.MountPath == dir })
	vol := slices.ContainsFunc(p.Volumes, func(v corev1.Volume) bool {
		return v.Name == "node-dir" && v.HostPath != nil && v.HostPath.Path == dir && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectory
	})
	return env && mount && vol
}
