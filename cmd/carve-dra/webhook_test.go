// Tests of carve-dra webhook (webhook.go): it serves HTTPS with the
// certificate it is given and answers an AdmissionReview.

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carve-gpu/carve/internal/dra"
	"github.com/carve-gpu/carve/internal/dra/dratest"
)

// TestWebhookServes: carve-dra webhook serves HTTPS with the certificate
// it is given, answers an AdmissionReview for a claim with a malformed
// config with a refusal that says why, reading the claim's DeviceClass
// from the API server (here one that has none), and stops with its
// context.
func TestWebhookServes(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key, err := dratest.ServingCert("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	o := webhookOptions{listen: "127.0.0.1:0", cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"),
		kubeconfig: filepath.Join(dir, "kubeconfig")}
	for f, b := range map[string][]byte{o.cert: cert, o.key: key} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: r.URL.Path + " not found"})
	}))
	defer api.Close()
	err = os.WriteFile(o.kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: api, cluster: {server: "`+api.URL+`"}}]
contexts: [{name: api, context: {cluster: api}}]
current-context: api
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serveWebhook(ctx, o, ready) }()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("the webhook did not start: %v", err)
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	claim := `{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"namespace": "ns", "name": "c"},
		"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.carve.dev"}}],
		"config": [{"opaque": {"driver": "gpu.carve.dev", "parameters": {"apiVersion": "gpu.carve.dev/v1alpha1", "kind": "ClaimConfig", "class": "gold"}}}]}}}`
	review, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Kind: metav1.GroupVersionKind{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"},
			Namespace: "ns", Name: "c", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(claim)}}})
	resp, err := client.Post("https://"+addr.String()+dra.WebhookPath, "application/json", bytes.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	var got admissionv1.AdmissionReview
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || got.Response == nil || got.Response.Allowed || got.Response.UID != "1" ||
		!strings.Contains(got.Response.Result.Message, `claim ns/c: class "gold": want ls, be or none`) {
		t.Errorf("the webhook's answer: %+v, %v", got.Response, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the webhook stopped with %v", err)
	}
}
