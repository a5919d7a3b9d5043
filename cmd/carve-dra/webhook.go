// carve-dra webhook: the admission webhook's command, which serves over
// HTTPS the dra package's check of a claim's carve config, its certificate
// and key read again from their files when either changes.

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/carve-gpu/carve/internal/dra"
)

type webhookOptions struct {
	listen, cert, key, kubeconfig string
}

func newWebhookCmd() *cobra.Command {
	var o webhookOptions
	c := &cobra.Command{
		Use:   "webhook",
		Short: "Serve the admission webhook that refuses claims whose carve config prepare would refuse",
		Long: `webhook serves a validating admission webhook (admission.k8s.io/v1) on
` + dra.WebhookPath + ` over HTTPS, for ResourceClaims and ResourceClaimTemplates: one
whose opaque config for gpu.carve.dev is malformed (an unknown field, a wrong
kind, a class that does not exist, a share over 1, a malformed memory, a BE
knob on an LS claim) is refused when it is created, with the message prepare
would give, by the same code; without it, such a claim is allocated and its
pod never starts. It reads DeviceClasses, whose configs come before the
claim's. What depends on the allocation (the TPCs and memory the claim got)
is still checked at prepare.

The chart (deploy/helm/carve-dra) runs it as a Deployment behind a Service
and registers it in a ValidatingWebhookConfiguration. The certificate and key
are read again when their files change (as cert-manager renews them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serveWebhook(ctx, o, nil)
		},
	}
	f := c.Flags()
	f.StringVar(&o.listen, "listen", ":8443", "address to serve HTTPS on")
	f.StringVar(&o.cert, "tls-cert-file", "/etc/carve-dra/tls/tls.crt", "the serving certificate (PEM), for the name the API server calls (SERVICE.NAMESPACE.svc)")
	f.StringVar(&o.key, "tls-private-key-file", "/etc/carve-dra/tls/tls.key", "the certificate's private key (PEM)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file, to read DeviceClasses (default: the pod's service account)")
	return c
}

// serveWebhook serves until ctx ends; ready, if not nil, gets the address
// it listens on.
func serveWebhook(ctx context.Context, o webhookOptions, ready chan<- net.Addr) error {
	client, err := kubeClient(o.kubeconfig)
	if err != nil {
		return err
	}
	certs := &certFiles{cert: o.cert, key: o.key}
	if _, err := certs.get(nil); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(dra.WebhookPath, dra.NewWebhook(client))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	// a review is one small object: a client that takes longer to send it
	// only holds a connection
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}}
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(c) // the reviews under way are answered
	}()
	klog.InfoS("Serving the admission webhook", "address", l.Addr().String(), "path", dra.WebhookPath)
	if ready != nil {
		ready <- l.Addr()
	}
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-shut // ServeTLS returns as Shutdown begins: wait until it is done
	return nil
}

// certFiles is a certificate and key read from files, again when either
// file changes.
type certFiles struct {
	cert, key string
	mu        sync.Mutex
	mod       [2]time.Time
	pair      *tls.Certificate
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var mod [2]time.Time
	for i, f := range []string{c.cert, c.key} {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		mod[i] = st.ModTime()
	}
	if c.pair != nil && mod == c.mod {
		return c.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return nil, err
	}
	c.pair, c.mod = &pair, mod
	return c.pair, nil
}
