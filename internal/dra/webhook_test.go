// Tests of webhook.go and validate.go: the webhook refuses a claim exactly
// where prepare would, allows claims with no config for carve, and is
// reached through the chart's ValidatingWebhookConfiguration.

package dra

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carve-gpu/carve/internal/dra/dratest"
)

// prepareError is what prepare says of the case's claim: "" where it
// prepares it.
func prepareError(t *testing.T, c dratest.ConfigCase) string {
	t.Helper()
	td := newTestDriver(t)
	claim := td.claim(t, c.Name, 8, c.Claim...)
	for _, cfg := range c.Class {
		claim.Status.Allocation.Devices.Config = append(claim.Status.Allocation.Devices.Config, resourceapi.DeviceAllocationConfiguration{
			Source: resourceapi.AllocationConfigSourceClass, Requests: []string{"gpu"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DriverName, Parameters: runtimeRaw(cfg)}}})
	}
	r := td.prepare(t, claim)[c.Name]
	if r.Err != nil {
		return r.Err.Error()
	}
	td.unprepareOK(t, claim)
	return ""
}

func review(t *testing.T, kind string, obj runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m := obj.(metav1.Object)
	return &admissionv1.AdmissionRequest{UID: "review-1", Kind: metav1.GroupVersionKind{Group: resourceapi.GroupName, Version: "v1", Kind: kind},
		Namespace: m.GetNamespace(), Name: m.GetName(), Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}
}

// TestWebhookAgreesWithPrepare: for each config (of the claim, and of its
// DeviceClass), the webhook refuses the claim exactly where prepare refuses
// it once allocated, with the very message prepare gives; a claim template
// with the same config is refused with the same reason.
func TestWebhookAgreesWithPrepare(t *testing.T) {
	refused := 0
	for _, c := range dratest.ConfigCases {
		want := prepareError(t, c)
		w := &Webhook{Classes: func(_ context.Context, name string) ([]resourceapi.DeviceClassConfiguration, error) {
			if name != DriverName {
				t.Errorf("the webhook reads class %s", name)
			}
			return c.ClassConfigs(), nil
		}}
		claim := c.NewClaim(DriverName)
		resp, err := w.Review(context.Background(), review(t, "ResourceClaim", claim))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if !resp.Allowed {
			got = resp.Result.Message
			refused++
		}
		if got != want || resp.UID != "review-1" {
			t.Errorf("%s: the webhook says %q, prepare %q", c.Name, got, want)
		}
		tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: claim.ObjectMeta, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec}}
		resp, err = w.Review(context.Background(), review(t, "ResourceClaimTemplate", tmpl))
		if err != nil {
			t.Fatal(err)
		}
		if want == "" && !resp.Allowed || want != "" && (resp.Allowed ||
			resp.Result.Message != "the claims of template ns/"+c.Name+": "+strings.TrimPrefix(want, "claim ns/"+c.Name+": ")) {
			t.Errorf("%s: the webhook says of the template %+v, prepare of the claim %q", c.Name, resp.Result, want)
		}
	}
	if refused < 8 {
		t.Errorf("%d cases refused", refused)
	}
}

// TestWebhookOtherClaims: a claim with no config for carve is allowed
// without a look at its class, whatever other drivers' configs say; a
// class that cannot be read is no verdict (an error, for the API server's
// failurePolicy), not a refusal.
func TestWebhookOtherClaims(t *testing.T) {
	w := &Webhook{Classes: func(context.Context, string) ([]resourceapi.DeviceClassConfiguration, error) {
		return nil, context.DeadlineExceeded
	}}
	claim := dratest.ConfigCase{Name: "other"}.NewClaim("gpu.example.com")
	claim.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtimeRaw(`{"class": "gold"}`)}}}}
	if resp, err := w.Review(context.Background(), review(t, "ResourceClaim", claim)); err != nil || !resp.Allowed {
		t.Errorf("another driver's claim: %+v, %v", resp, err)
	}
	claim = dratest.ConfigCases[1].NewClaim(DriverName)
	if resp, err := w.Review(context.Background(), review(t, "ResourceClaim", claim)); err == nil || !strings.Contains(err.Error(), "reading DeviceClass") {
		t.Errorf("a claim whose class cannot be read: %+v, %v", resp, err)
	}
}

// TestConfigCaseClaims: dratest's claims of the config cases ask for TPCs
// by the capacity carve-dra publishes them as, and their configs are for
// carve-dra.
func TestConfigCaseClaims(t *testing.T) {
	for _, c := range dratest.ConfigCases {
		claim := c.NewClaim(DriverName)
		if _, ok := claim.Spec.Devices.Requests[0].Exactly.Capacity.Requests[CapacityTPCs]; !ok {
			t.Errorf("%s: the claim asks for %v, not for %s", c.Name, claim.Spec.Devices.Requests[0].Exactly.Capacity.Requests, CapacityTPCs)
		}
		var configs []resourceapi.DeviceConfiguration
		for _, cfg := range claim.Spec.Devices.Config {
			configs = append(configs, cfg.DeviceConfiguration)
		}
		for _, cfg := range c.ClassConfigs() {
			configs = append(configs, cfg.DeviceConfiguration)
		}
		for _, cfg := range configs {
			if cfg.Opaque.Driver != DriverName {
				t.Errorf("%s: a config for %s", c.Name, cfg.Opaque.Driver)
			}
		}
	}
}
