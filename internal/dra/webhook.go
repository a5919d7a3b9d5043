// The validating admission webhook for ResourceClaims and
// ResourceClaimTemplates: AdmissionReviews in, ValidateClaim's verdict out.

package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// WebhookPath is where the webhook serves AdmissionReviews.
const WebhookPath = "/validate"

// Webhook is a validating admission webhook (admission.k8s.io/v1) for
// ResourceClaims and ResourceClaimTemplates (resource.k8s.io/v1): it
// refuses one whose config for carve's driver prepare would refuse, with
// prepare's message (ValidateClaim).
type Webhook struct {
	Classes ClassConfigs
}

// NewWebhook reads DeviceClasses' configs through client.
func NewWebhook(client kubernetes.Interface) *Webhook {
	return &Webhook{Classes: func(ctx context.Context, name string) ([]resourceapi.DeviceClassConfiguration, error) {
		c, err := client.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return c.Spec.Config, nil
	}}
}

// ServeHTTP answers one AdmissionReview.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err == nil && review.Request == nil {
		err = fmt.Errorf("an AdmissionReview without a request")
	}
	if err != nil {
		http.Error(rw, "want an admission.k8s.io/v1 AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	// within the API server's timeout for the webhook (the chart's 5 s),
	// so that it gets this answer, not its own timeout
	ctx, cancel := context.WithTimeout(r.Context(), 4*time.Second)
	defer cancel()
	resp, err := w.Review(ctx, review.Request)
	if err != nil { // the API server applies the webhook's failurePolicy
		klog.FromContext(ctx).Error(err, "Reviewing", "object", klog.KRef(review.Request.Namespace, review.Request.Name))
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	review.Request, review.Response = nil, resp
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(review)
}

// Review decides one admission request; an error is a failure to decide
// (a DeviceClass that could not be read).
func (w *Webhook) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	deny := func(err error) (*admissionv1.AdmissionResponse, error) {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonInvalid,
			Code: http.StatusUnprocessableEntity}
		return resp, nil
	}
	var spec resourceapi.ResourceClaimSpec
	var what string
	var meta metav1.ObjectMeta
	switch req.Kind {
	case metav1.GroupVersionKind{Group: resourceapi.GroupName, Version: "v1", Kind: "ResourceClaim"}:
		var c resourceapi.ResourceClaim
		if err := json.Unmarshal(req.Object.Raw, &c); err != nil {
			return deny(fmt.Errorf("decoding the ResourceClaim: %w", err))
		}
		spec, what, meta = c.Spec, "claim", c.ObjectMeta
	case metav1.GroupVersionKind{Group: resourceapi.GroupName, Version: "v1", Kind: "ResourceClaimTemplate"}:
		var c resourceapi.ResourceClaimTemplate
		if err := json.Unmarshal(req.Object.Raw, &c); err != nil {
			return deny(fmt.Errorf("decoding the ResourceClaimTemplate: %w", err))
		}
		spec, what, meta = c.Spec.Spec, "the claims of template", c.ObjectMeta
	default:
		return resp, nil // not ours to judge: the webhook's rules name only the two kinds
	}
	name := meta.Name
	if name == "" { // a name the API server has yet to generate
		name = meta.GenerateName + "*"
	}
	err := ValidateClaim(ctx, spec, w.Classes)
	var lookup *classError
	if errors.As(err, &lookup) {
		return nil, err
	}
	if err != nil {
		if what == "claim" {
			err = claimError(req.Namespace, name, err)
		} else {
			err = fmt.Errorf("%s %s/%s: %w", what, req.Namespace, name, err)
		}
		klog.FromContext(ctx).V(2).Info("Refused", "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, name), "err", err)
		return deny(err)
	}
	return resp, nil
}
