// carve-dra's admission webhook called by a real API server (make kube).

package e2e

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carve-gpu/carve/internal/chart/charttest"
	"github.com/carve-gpu/carve/internal/dra"
	"github.com/carve-gpu/carve/internal/dra/dratest"
)

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
	cp.install(t, charttest.Set("webhook.enabled", false)) // the class, without a Service that no pod serves
	cp.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	for _, c := range dratest.ConfigCases { // a class of its own for each case with one
		if len(c.Class) > 0 {
			cp.create(t, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name}, Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + dra.DriverName + `"`}}},
				Config:    c.ClassConfigs()}})
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
	hook := dra.NewWebhook(cp.client)
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
	vwc := charttest.Named[*admissionregv1.ValidatingWebhookConfiguration](t, charttest.Objects(t, nil), "carve-dra-webhook")
	url := srv.URL + dra.WebhookPath
	vwc.Webhooks[0].ClientConfig = admissionregv1.WebhookClientConfig{URL: &url, CABundle: ca}
	if _, err := cp.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// the API server takes the configuration up a moment later: until a
	// malformed claim (not stored: a dry run) is refused by the webhook
	probe := dratest.ConfigCase{Name: "probe", Claim: []string{dratest.ClaimConfig(`, "class": "gold"`)}}.NewClaim(dra.DriverName)
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
	for _, c := range dratest.ConfigCases {
		want := prepareError(t, c)
		class := dra.DriverName
		if len(c.Class) > 0 {
			class = c.Name
		}
		_, err := cp.client.ResourceV1().ResourceClaims("ns").Create(ctx, c.NewClaim(class), metav1.CreateOptions{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: prepare takes it, the API server refuses it: %v", c.Name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), `admission webhook "claims.gpu.carve.dev" denied the request: `+want)):
			t.Errorf("%s: the API server says %v, prepare %q", c.Name, err, want)
		case want != "":
			refused++
		}
	}
	if refused < 8 {
		t.Errorf("%d claims refused", refused)
	}
	bad := dratest.ConfigCase{Name: "tmpl", Claim: []string{dratest.ClaimConfig(`, "connections": 0`)}}.NewClaim(dra.DriverName)
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: bad.ObjectMeta, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: bad.Spec}}
	if _, err := cp.client.ResourceV1().ResourceClaimTemplates("ns").Create(ctx, tmpl, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "the claims of template ns/"+bad.Name+": connections 0") {
		t.Errorf("a claim template with a malformed config: %v", err)
	}
	other := dratest.ConfigCase{Name: "other"}.NewClaim(dra.DriverName)
	other.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: dratest.Raw(`{"class": "gold"}`)}}}}
	if _, err := cp.client.ResourceV1().ResourceClaims("ns").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Errorf("a claim with another driver's config: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent["other"] || sent["none"] || !sent["ls"] || !sent[tmpl.Name] {
		t.Errorf("the API server sent the webhook %v: want those with a config for carve (ls, %s), not those without (other, none)", sent, tmpl.Name)
	}
}
