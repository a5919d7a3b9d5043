// Tests of the example manifests (deploy/kubernetes) and of the chart's
// DeviceClass and RBAC: they decode strictly, and the ClusterRole allows
// every call carve-dra makes.

package dra

import (
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	configapi "github.com/carve-gpu/carve/internal/api/gpu.carve.dev/v1alpha1"
	"github.com/carve-gpu/carve/internal/chart/charttest"
)

func all[T runtime.Object](objs []runtime.Object) []T {
	var found []T
	for _, o := range objs {
		if x, ok := o.(T); ok {
			found = append(found, x)
		}
	}
	return found
}

func one[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	found := all[T](objs)
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want one", len(found), zero)
	}
	return found[0]
}

// clusterRole is carve-dra's ClusterRole, as the chart renders it.
func clusterRole(t *testing.T) *rbacv1.ClusterRole {
	return charttest.Named[*rbacv1.ClusterRole](t, charttest.Objects(t, nil), "carve-dra")
}

// allowed checks that role lets carve-dra make every call it made. A
// write of a claim's status needs, besides resourceclaims/status, what the
// API server checks since Kubernetes 1.36 for status.devices
// (DRAResourceClaimGranularStatusAuthorization): associated-node:VERB on
// resourceclaims/driver, named by the driver.
func allowed(t *testing.T, role *rbacv1.ClusterRole, actions []k8stesting.Action) {
	t.Helper()
	if len(actions) == 0 {
		t.Fatal("no API call to check")
	}
	grants := func(group, res, verb, name string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, verb) &&
				(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
				return true
			}
		}
		return false
	}
	for _, a := range actions {
		group, res, verb := a.GetResource().Group, a.GetResource().Resource, a.GetVerb()
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		if !grants(group, res, verb, "") {
			t.Errorf("carve-dra's ClusterRole does not allow %s %s (group %q)", verb, res, group)
		}
		if group == resourceapi.GroupName && res == "resourceclaims/status" &&
			!grants(group, "resourceclaims/driver", resourceapi.VerbPrefixAssociatedNode+verb, DriverName) {
			t.Errorf("carve-dra's ClusterRole does not allow %s%s resourceclaims/driver %s, which writing status.devices needs",
				resourceapi.VerbPrefixAssociatedNode, verb, DriverName)
		}
	}
}

// TestManifests: the chart's objects decode strictly; the DeviceClass
// selects carve's driver; the plugin runs as the service account the RBAC
// binds and the admission policy names; no container is privileged but the
// init container that mounts MPS's tmpfs and, with health.xid (the
// default: the kernel log), the plugin; the plugin sees the MPS daemon's
// pid; every example claim asks carve's class for TPCs with configs
// carve-dra accepts.
func TestManifests(t *testing.T) {
	objs := charttest.Objects(t, nil)
	class := one[*resourceapi.DeviceClass](t, objs)
	if len(class.Spec.Selectors) != 1 || !strings.Contains(class.Spec.Selectors[0].CEL.Expression, `"`+DriverName+`"`) {
		t.Errorf("DeviceClass selectors %+v", class.Spec.Selectors)
	}
	ds := charttest.Named[*appsv1.DaemonSet](t, objs, "carve-dra")
	sa := charttest.Named[*corev1.ServiceAccount](t, objs, "carve-dra")
	pod := ds.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || ds.Namespace != sa.Namespace {
		t.Errorf("DaemonSet runs as %s/%s, the service account is %s/%s", ds.Namespace, pod.ServiceAccountName, sa.Namespace, sa.Name)
	}
	user := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	vap := one[*admissionv1.ValidatingAdmissionPolicy](t, objs)
	if b := one[*admissionv1.ValidatingAdmissionPolicyBinding](t, objs); b.Spec.PolicyName != vap.Name {
		t.Errorf("the binding names policy %s, not %s", b.Spec.PolicyName, vap.Name)
	}
	if !strings.Contains(vap.Spec.MatchConditions[0].Expression, `"`+user+`"`) {
		t.Errorf("the admission policy matches %q, not %s", vap.Spec.MatchConditions[0].Expression, user)
	}
	for _, values := range []map[string]any{nil, charttest.Set("health.xid", false)} {
		for _, d := range all[*appsv1.DaemonSet](charttest.Objects(t, values)) {
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged &&
					(values == nil) != (d.Name == "carve-dra") {
					t.Errorf("values %v: container %s of %s is privileged", values, c.Name, d.Name)
				}
			}
		}
	}
	if mps := charttest.Named[*appsv1.DaemonSet](t, objs, "carve-daemon"); !pod.HostPID || !mps.Spec.Template.Spec.HostPID {
		t.Error("the plugin must see the MPS daemon's pid: hostPID in both DaemonSets")
	}

	templates := 0
	for _, o := range charttest.Examples(t) {
		tmpl, ok := o.(*resourceapi.ResourceClaimTemplate)
		if !ok {
			continue
		}
		templates++
		devs := tmpl.Spec.Spec.Devices
		for _, r := range devs.Requests {
			if r.Exactly == nil || r.Exactly.DeviceClassName != class.Name || r.Exactly.Capacity == nil {
				t.Errorf("template %s: request %+v", tmpl.Name, r)
				continue
			}
			if _, ok := r.Exactly.Capacity.Requests[CapacityTPCs]; !ok {
				t.Errorf("template %s asks for no %s", tmpl.Name, CapacityTPCs)
			}
		}
		var configs []*configapi.ClaimConfig
		for _, c := range devs.Config {
			cfg, err := configapi.ParseConfig(c.Opaque.Parameters.Raw)
			if err != nil || c.Opaque.Driver != DriverName {
				t.Errorf("template %s: config for %s: %v", tmpl.Name, c.Opaque.Driver, err)
				continue
			}
			configs = append(configs, cfg)
		}
		if _, err := configapi.Resolve(configs); err != nil {
			t.Errorf("template %s: %v", tmpl.Name, err)
		}
	}
	if templates < 3 {
		t.Errorf("%d claim templates in the examples", templates)
	}
}
