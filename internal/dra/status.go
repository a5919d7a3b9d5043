// A prepared claim's status in the API (status.devices): its Ready and
// MPS conditions and the partition it got.

package dra

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// Status is what a prepared claim's device status says in its data: the
// partition the claim got on the node.
type Status struct {
	GPU   string `json:"gpu"` // UUID
	TPCs  string `json:"tpcs"`
	Count int    `json:"count"`
	SMs   int    `json:"sms"`
	Class string `json:"class"`
	MPS   bool   `json:"mps"`
	// Memory is the limit of what its processes may allocate together, in
	// bytes (0: none).
	Memory uint64 `json:"memory"`
}

// The condition the driver keeps in each of its devices' status.
const (
	ConditionReady  = "Ready"
	ReasonPrepared  = "Prepared"
	ReasonFailed    = "PrepareFailed"
	statusFieldName = DriverName
)

// writeStatus records the outcome of preparing c in the claim's status
// (status.devices): a Ready condition and, once prepared, the partition
// and the MPS condition (m: whether it wanted MPS and got it).
// It is best-effort: a failure to write is logged, not returned.
func (d *Driver) writeStatus(ctx context.Context, c *resourceapi.ResourceClaim, r kubeletplugin.PrepareResult, m *mpsChoice) {
	if d.Client == nil || c.Status.Allocation == nil {
		return
	}
	var entries []resourceapi.AllocatedDeviceStatus
	for _, res := range c.Status.Allocation.Devices.Results {
		if res.Driver != DriverName {
			continue
		}
		e := resourceapi.AllocatedDeviceStatus{Driver: DriverName, Pool: res.Pool, Device: res.Device}
		if res.ShareID != nil {
			e.ShareID = ptrString(string(*res.ShareID))
		}
		cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPrepared,
			Message: "partition reserved on the node", ObservedGeneration: c.Generation}
		if r.Err != nil {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonFailed, r.Err.Error()
		} else if st, err := d.state().status(c, res.Device); err == nil {
			b, _ := json.Marshal(st)
			e.Data = &runtime.RawExtension{Raw: b}
		}
		meta.SetStatusCondition(&e.Conditions, cond)
		if r.Err == nil && m != nil {
			meta.SetStatusCondition(&e.Conditions, m.condition(d.Paths.MPS.PipeDir(), c.Generation))
		}
		entries = append(entries, e)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := d.Client.ResourceV1().ResourceClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != c.UID {
			return fmt.Errorf("claim %s/%s was replaced", c.Namespace, c.Name)
		}
		var keep []resourceapi.AllocatedDeviceStatus
		for _, e := range cur.Status.Devices {
			if e.Driver != DriverName {
				keep = append(keep, e)
			}
		}
		cur.Status.Devices = append(keep, entries...)
		_, err = d.Client.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: statusFieldName})
		return err
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Writing a claim's status failed", "claim", klog.KObj(c))
	}
}

func ptrString(s string) *string { return &s }
