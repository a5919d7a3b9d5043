// Tests of webhook.go and validate.go: the webhook refuses a claim exactly
// where prepare would, allows claims with no config for carve, and is
// reached through the chart's ValidatingWebhookConfiguration.

package dra

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carve-gpu/carve/internal/dra/dratest"
)

// configCase is a claim of 8 TPCs with the given configs for carve of its
// DeviceClass's and of its own.
type configCase struct {
	name         string
	class, claim []string
}

func claimConfig(fields string) string {
	return `{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig"` + fields + `}`
}

var configCases = []configCase{
	{name: "none"},
	{name: "ls", claim: []string{claimConfig(`, "class": "ls", "own": true`)}},
	{name: "be", claim: []string{claimConfig(`, "class": "be", "inflight": 4, "beShare": 0.5, "beFloor": 4, "queue": "300us"`)}},
	{name: "be-in-two", claim: []string{claimConfig(`, "class": "be"`), claimConfig(`, "inflight": 2`)}},
	{name: "be-by-class", class: []string{claimConfig(`, "class": "be"`)}, claim: []string{claimConfig(`, "inflight": 2`)}},
	{name: "mps-off", claim: []string{claimConfig(`, "mps": false, "allSMs": true, "allowUnpartitioned": true`)}},
	{name: "unknown-field", claim: []string{claimConfig(`, "clas": "ls"`)}},
	{name: "wrong-kind", claim: []string{`{"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "Config", "class": "ls"}`}},
	{name: "bad-class", claim: []string{claimConfig(`, "class": "gold"`)}},
	{name: "share-over-1", claim: []string{claimConfig(`, "class": "be", "beShare": 1.5`)}},
	{name: "bad-memory", claim: []string{claimConfig(`, "memory": "12X"`)}},
	{name: "ls-with-be-knob", claim: []string{claimConfig(`, "class": "ls", "inflight": 4`)}},
	{name: "ls-by-class-be-knob", class: []string{claimConfig(`, "class": "ls"`)}, claim: []string{claimConfig(`, "beShare": 0.2`)}},
	{name: "connections-0", claim: []string{claimConfig(`, "connections": 0`)}},
}

// prepareError is what prepare says of the case's claim: "" where it
// prepares it.
func prepareError(t *testing.T, c configCase) string {
	t.Helper()
	td := newTestDriver(t)
	claim := td.claim(t, c.name, 8, c.claim...)
	for _, cfg := range c.class {
		claim.Status.Allocation.Devices.Config = append(claim.Status.Allocation.Devices.Config, resourceapi.DeviceAllocationConfiguration{
			Source: resourceapi.AllocationConfigSourceClass, Requests: []string{"gpu"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DriverName, Parameters: runtimeRaw(cfg)}}})
	}
	r := td.prepare(t, claim)[c.name]
	if r.Err != nil {
		return r.Err.Error()
	}
	td.unprepareOK(t, claim)
	return ""
}

// newClaim is the case's claim as a user writes it: a request of class
// for 8 TPCs and its configs.
func (c configCase) newClaim(class string) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: c.name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Capacity: &resourceapi.CapacityRequirements{
				Requests: map[resourceapi.QualifiedName]resource.Quantity{CapacityTPCs: resource.MustParse("8")}}}}}}}}
	for _, cfg := range c.claim {
		claim.Spec.Devices.Config = append(claim.Spec.Devices.Config, resourceapi.DeviceClaimConfiguration{
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DriverName, Parameters: runtimeRaw(cfg)}}})
	}
	return claim
}

// classConfigs is the DeviceClass configs of the case, as the API has them.
func (c configCase) classConfigs() []resourceapi.DeviceClassConfiguration {
	var out []resourceapi.DeviceClassConfiguration
	for _, cfg := range c.class {
		out = append(out, resourceapi.DeviceClassConfiguration{
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DriverName, Parameters: runtimeRaw(cfg)}}})
	}
	return out
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
	for _, c := range configCases {
		want := prepareError(t, c)
		w := &Webhook{Classes: func(_ context.Context, name string) ([]resourceapi.DeviceClassConfiguration, error) {
			if name != DriverName {
				t.Errorf("the webhook reads class %s", name)
			}
			return c.classConfigs(), nil
		}}
		claim := c.newClaim(DriverName)
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
			t.Errorf("%s: the webhook says %q, prepare %q", c.name, got, want)
		}
		tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: claim.ObjectMeta, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec}}
		resp, err = w.Review(context.Background(), review(t, "ResourceClaimTemplate", tmpl))
		if err != nil {
			t.Fatal(err)
		}
		if want == "" && !resp.Allowed || want != "" && (resp.Allowed ||
			resp.Result.Message != "the claims of template ns/"+c.name+": "+strings.TrimPrefix(want, "claim ns/"+c.name+": ")) {
			t.Errorf("%s: the webhook says of the template %+v, prepare of the claim %q", c.name, resp.Result, want)
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
	claim := configCase{name: "other"}.newClaim("gpu.example.com")
	claim.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtimeRaw(`{"class": "gold"}`)}}}}
	if resp, err := w.Review(context.Background(), review(t, "ResourceClaim", claim)); err != nil || !resp.Allowed {
		t.Errorf("another driver's claim: %+v, %v", resp, err)
	}
	claim = configCases[1].newClaim(DriverName)
	if resp, err := w.Review(context.Background(), review(t, "ResourceClaim", claim)); err == nil || !strings.Contains(err.Error(), "reading DeviceClass") {
		t.Errorf("a claim whose class cannot be read: %+v, %v", resp, err)
	}
}

// TestWebhookEndToEnd: the chart's ValidatingWebhookConfiguration, pointed
// at the webhook on 127.0.0.1 (a CA and serving certificate made here),
// makes a real API server (make kube) refuse at creation each claim whose
// config prepare refuses, with prepare's message, and a claim template
// too; it accepts the others, those whose config is valid only after their
// DeviceClass's, and another driver's claim (which its matchConditions do
// not send to the webhook).
func TestWebhookEndToEnd(t *testing.T) {
	cp := startControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cp.install(t, helmSet("webhook.enabled", false)) // the class, without a Service that no pod serves
	cp.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	for _, c := range configCases { // a class of its own for each case with one
		if len(c.class) > 0 {
			cp.create(t, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + DriverName + `"`}}},
				Config:    c.classConfigs()}})
		}
	}

	ca, cert, key, err := dratest.ServingCert("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	// the names of the claims the API server sent
	var mu sync.Mutex
	sent := map[string]bool{}
	hook := NewWebhook(cp.client)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var rev admissionv1.AdmissionReview
		if json.Unmarshal(b, &rev) == nil && rev.Request != nil {
			mu.Lock()
			sent[rev.Request.Name] = true
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		hook.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	vwc := named[*admissionregv1.ValidatingWebhookConfiguration](t, chartObjects(t, nil), "carve-dra-webhook")
	url := srv.URL + WebhookPath
	vwc.Webhooks[0].ClientConfig = admissionregv1.WebhookClientConfig{URL: &url, CABundle: ca}
	if _, err := cp.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// the API server takes the configuration up a moment later: until a
	// malformed claim (not stored: a dry run) is refused by the webhook
	probe := configCase{name: "probe", claim: []string{claimConfig(`, "class": "gold"`)}}.newClaim(DriverName)
	for {
		_, err := cp.client.ResourceV1().ResourceClaims("ns").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), `class "gold"`) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the API server does not call the webhook: a malformed claim's creation says %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	refused := 0
	for _, c := range configCases {
		want := prepareError(t, c)
		class := DriverName
		if len(c.class) > 0 {
			class = c.name
		}
		_, err := cp.client.ResourceV1().ResourceClaims("ns").Create(ctx, c.newClaim(class), metav1.CreateOptions{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: prepare takes it, the API server refuses it: %v", c.name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), `admission webhook "claims.gpu.carve.dev" denied the request: `+want)):
			t.Errorf("%s: the API server says %v, prepare %q", c.name, err, want)
		case want != "":
			refused++
		}
	}
	if refused < 8 {
		t.Errorf("%d claims refused", refused)
	}
	bad := configCase{name: "tmpl", claim: []string{claimConfig(`, "connections": 0`)}}.newClaim(DriverName)
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: bad.ObjectMeta, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: bad.Spec}}
	if _, err := cp.client.ResourceV1().ResourceClaimTemplates("ns").Create(ctx, tmpl, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "the claims of template ns/"+bad.Name+": connections 0") {
		t.Errorf("a claim template with a malformed config: %v", err)
	}
	other := configCase{name: "other"}.newClaim(DriverName)
	other.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtimeRaw(`{"class": "gold"}`)}}}}
	if _, err := cp.client.ResourceV1().ResourceClaims("ns").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Errorf("a claim with another driver's config: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent["other"] || sent["none"] || !sent["ls"] || !sent[tmpl.Name] {
		t.Errorf("the API server sent the webhook %v: want those with a config for carve (ls, %s), not those without (other, none)", sent, tmpl.Name)
	}
}
