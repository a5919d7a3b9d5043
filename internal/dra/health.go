// The GPUs' health: the NVIDIA driver's list of GPUs and the kernel log's
// Xid reports, made into the devices' taints and the kubelet's health
// reports (Health).

package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/carve-gpu/carve/internal/xid"
)

// The taints a device gets while it is unhealthy (effect NoSchedule: claims
// already running on it are left, new ones are not allocated it).
const (
	TaintGone = DriverName + "/gone" // the NVIDIA driver does not list the GPU
	TaintXid  = DriverName + "/xid"  // the GPU reported a fatal Xid (the value is its number)
)

// FatalXids are the Xids that taint a GPU by default: errors of the GPU
// itself rather than of the program that ran on it (31, 13, 43... end a
// program's context and leave the GPU fine).
var FatalXids = []int{
	48,  // double-bit ECC error
	64,  // ECC page retirement or row remapping failed
	74,  // NVLink error
	79,  // fallen off the bus
	94,  // contained ECC error (the GPU needs a reset to clear it)
	95,  // uncontained ECC error
	119, // GSP RPC timeout
	120, // GSP error
	140, // unrecovered ECC error
}

// HealthConfig is what a Health monitor watches.
type HealthConfig struct {
	// ProcRoot is where the NVIDIA driver's /proc/driver/nvidia/gpus is
	// (default /proc).
	ProcRoot string
	// ReadXids returns the Xid reports in the kernel log (default xid.Read).
	ReadXids func() ([]xid.Event, error)
	// Fatal are the Xids that taint a GPU (default FatalXids).
	Fatal []int
	// XidHold is how long a fatal Xid taints its GPU. 0: until the plugin
	// restarts (reports from before it started are not counted); more: for
	// that long after the report, across restarts while the kernel log
	// holds it.
	XidHold time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Interval is how often Run checks (default 5s); Resend how often
	// WatchHealthStatus repeats a report that did not change (default 10s,
	// within the kubelet's 30s).
	Interval, Resend time.Duration
}

// Health watches the node's GPUs (whether the NVIDIA driver lists them, and
// the Xids they report) and says which are unhealthy: as taints of their
// devices in the ResourceSlice, and in reports to the kubelet's resource
// health service.
type Health struct {
	c     HealthConfig
	gpus  []GPU
	start time.Time

	mu      sync.Mutex
	bus     map[string]string                    // UUID: its bus location, as last seen ("0000:00:06.0")
	goneAt  map[string]time.Time                 // UUID: when it was first seen gone
	taints  map[string][]resourceapi.DeviceTaint // device name: its taints
	checked time.Time
	changed chan struct{} // closed and replaced on a change
	xidErr  error         // the last error reading the kernel log, logged once
}

// NewHealth returns a monitor of gpus; nothing is checked until Check.
func NewHealth(gpus []GPU, c HealthConfig) *Health {
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	if c.ReadXids == nil {
		c.ReadXids = xid.Read
	}
	if c.Fatal == nil {
		c.Fatal = FatalXids
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	if c.Resend <= 0 {
		c.Resend = 10 * time.Second
	}
	return &Health{c: c, gpus: gpus, start: c.Now(), bus: map[string]string{}, goneAt: map[string]time.Time{},
		taints: map[string][]resourceapi.DeviceTaint{}, changed: make(chan struct{})}
}

// listed returns the bus locations of the GPUs the NVIDIA driver lists, by
// UUID.
func (h *Health) listed() map[string]string {
	out := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(h.c.ProcRoot, "driver/nvidia/gpus/*/information"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		bus := filepath.Base(filepath.Dir(f))
		var uuid string
		for l := range strings.Lines(string(b)) {
			k, v, ok := strings.Cut(l, ":")
			switch v = strings.TrimSpace(v); {
			case !ok:
			case strings.TrimSpace(k) == "GPU UUID":
				uuid = v
			case strings.TrimSpace(k) == "Bus Location":
				bus = v
			}
		}
		if uuid != "" {
			out[uuid] = strings.ToLower(bus)
		}
	}
	return out
}

// names reports whether an Xid report's device ("PCI:0000:00:06") is the
// GPU at bus location bus ("0000:00:06.0").
func names(device, bus string) bool {
	d := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(device), "PCI:"))
	return bus != "" && d != "" && (bus == d || strings.HasPrefix(bus, d+"."))
}

// Check looks at the GPUs now and reports whether any device's taints
// changed.
func (h *Health) Check(ctx context.Context) bool {
	now := h.c.Now()
	listed := h.listed()
	events, err := h.c.ReadXids()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && (h.xidErr == nil || h.xidErr.Error() != err.Error()) {
		klog.FromContext(ctx).Error(err, "Reading Xids: GPUs are watched for leaving the node only")
	}
	h.xidErr = err
	next := map[string][]resourceapi.DeviceTaint{}
	for _, g := range h.gpus {
		uuid := g.Topology.UUID
		var ts []resourceapi.DeviceTaint
		if bus, ok := listed[uuid]; ok {
			h.bus[uuid] = bus
			delete(h.goneAt, uuid)
		} else {
			if _, ok := h.goneAt[uuid]; !ok {
				h.goneAt[uuid] = now
			}
			ts = append(ts, taint(TaintGone, "", h.goneAt[uuid]))
		}
		var last *xid.Event
		for i, e := range events {
			if !slices.Contains(h.c.Fatal, e.Xid) || !names(e.Device, h.bus[uuid]) {
				continue
			}
			if h.c.XidHold == 0 && e.At.Before(h.start) || h.c.XidHold > 0 && !now.Before(e.At.Add(h.c.XidHold)) {
				continue
			}
			if last == nil || !e.At.Before(last.At) {
				last = &events[i]
			}
		}
		if last != nil {
			ts = append(ts, taint(TaintXid, strconv.Itoa(last.Xid), last.At))
		}
		if len(ts) > 0 {
			next[g.DeviceName()] = ts
		}
	}
	first := h.checked.IsZero()
	h.checked = now
	if equalTaints(h.taints, next) {
		if first { // from unknown to healthy, for the kubelet
			close(h.changed)
			h.changed = make(chan struct{})
		}
		return false
	}
	for _, g := range h.gpus {
		if n, was := next[g.DeviceName()], h.taints[g.DeviceName()]; !slices.EqualFunc(n, was, sameTaint) {
			klog.FromContext(ctx).Info("Device health changed", "device", g.DeviceName(), "uuid", g.Topology.UUID, "taints", describe(n))
		}
	}
	h.taints = next
	close(h.changed)
	h.changed = make(chan struct{})
	return true
}

// taint is a NoSchedule taint added at t (to the second: what the API keeps
// of it, so that the published slice does not differ from the stored one).
func taint(key, value string, t time.Time) resourceapi.DeviceTaint {
	at := metav1.NewTime(t.Truncate(time.Second))
	return resourceapi.DeviceTaint{Key: key, Value: value, Effect: resourceapi.DeviceTaintEffectNoSchedule, TimeAdded: &at}
}

func sameTaint(a, b resourceapi.DeviceTaint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect && a.TimeAdded.Equal(b.TimeAdded)
}

func equalTaints(a, b map[string][]resourceapi.DeviceTaint) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.EqualFunc(v, b[k], sameTaint) {
			return false
		}
	}
	return true
}

// describe is a device's taints as a message: "" where it is healthy.
func describe(ts []resourceapi.DeviceTaint) string {
	var s []string
	for _, t := range ts {
		switch t.Key {
		case TaintGone:
			s = append(s, "the NVIDIA driver does not list the GPU")
		case TaintXid:
			s = append(s, fmt.Sprintf("fatal Xid %s at %s", t.Value, t.TimeAdded.UTC().Format(time.RFC3339)))
		default:
			s = append(s, t.Key)
		}
	}
	return strings.Join(s, "; ")
}

// Taints returns the taints of a device now.
func (h *Health) Taints(device string) []resourceapi.DeviceTaint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.taints[device])
}

// Resources is what the driver publishes, each device with its taints.
func (h *Health) Resources(node string) resourceslice.DriverResources {
	r := Resources(node, h.gpus)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range r.Pools {
		for _, s := range p.Slices {
			for i := range s.Devices {
				// copies: the slice controller rounds their times in place
				for _, t := range h.taints[s.Devices[i].Name] {
					s.Devices[i].Taints = append(s.Devices[i].Taints, *t.DeepCopy())
				}
			}
		}
	}
	return r
}

// Report is the devices' health in the pool of node now, and a channel that
// is closed when it changes.
func (h *Health) Report(node string) (kubeletplugin.DeviceHealthReport, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var r kubeletplugin.DeviceHealthReport
	for _, g := range h.gpus {
		d := kubeletplugin.DeviceHealth{PoolName: node, DeviceName: g.DeviceName(), Health: kubeletplugin.HealthStatusHealthy,
			LastUpdated: h.checked, HealthCheckTimeout: 3 * h.c.Resend}
		if ts := h.taints[g.DeviceName()]; len(ts) > 0 {
			d.Health, d.Message = kubeletplugin.HealthStatusUnhealthy, describe(ts)
		}
		if h.checked.IsZero() {
			d.Health = kubeletplugin.HealthStatusUnknown
		}
		r.Devices = append(r.Devices, d)
	}
	return r, h.changed
}

// Run checks the GPUs every Interval until ctx ends, calling publish after
// each change.
func (h *Health) Run(ctx context.Context, publish func(context.Context) error) {
	t := time.NewTicker(h.c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if h.Check(ctx) {
			if err := publish(ctx); err != nil && !errors.Is(err, context.Canceled) {
				klog.FromContext(ctx).Error(err, "Republishing the node's GPUs")
			}
		}
	}
}

// Watch sends the kubelet a report of every device's health now, again on
// each change and every Resend, until ctx ends.
func (h *Health) Watch(ctx context.Context, node string, reports chan<- kubeletplugin.DeviceHealthReport) error {
	t := time.NewTicker(h.c.Resend)
	defer t.Stop()
	for {
		r, changed := h.Report(node)
		select {
		case <-ctx.Done():
			return nil
		case reports <- r:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-t.C:
		}
	}
}
