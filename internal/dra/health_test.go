// Tests of health.go on a fake node: Xid reports and GPUs gone become
// taints, held a while and lifted, and the kubelet's health reports.

package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/carve-gpu/carve/internal/topo/topotest"
	"github.com/carve-gpu/carve/internal/xid"
)

// fakeNode is a node's GPUs as the NVIDIA driver lists them under a fake
// /proc, its kernel log, and a clock.
type fakeNode struct {
	t    *testing.T
	proc string
	kmsg strings.Builder
	seq  int
	boot time.Time
	now  time.Time
	gpus []GPU
}

func newFakeNode(t *testing.T) *fakeNode {
	boot := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	n := &fakeNode{t: t, proc: t.TempDir(), boot: boot, now: boot.Add(time.Hour)}
	for i := range 2 {
		top := *topotest.H100(t)
		top.UUID = fmt.Sprintf("GPU-0000000%d-9cff-a913-b219-b274d00e237a", i)
		n.gpus = append(n.gpus, GPU{Index: i, Topology: &top})
		n.plug(i)
	}
	return n
}

func (n *fakeNode) bus(i int) string { return fmt.Sprintf("0000:00:0%d.0", 6+i) }

// plug lists GPU i in the driver's /proc; unplug removes it.
func (n *fakeNode) plug(i int) {
	dir := filepath.Join(n.proc, "driver/nvidia/gpus", n.bus(i))
	os.MkdirAll(dir, 0o755)
	info := fmt.Sprintf("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 35\nGPU UUID: \t %s\nBus Type: \t PCIe\nBus Location: \t %s\nDevice Minor: \t %d\n",
		n.gpus[i].Topology.UUID, n.bus(i), i)
	if err := os.WriteFile(filepath.Join(dir, "information"), []byte(info), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *fakeNode) unplug(i int) { os.RemoveAll(filepath.Join(n.proc, "driver/nvidia/gpus", n.bus(i))) }

// xid writes an Xid report of GPU i into the kernel log, now.
func (n *fakeNode) xid(i, x int) {
	n.seq++
	fmt.Fprintf(&n.kmsg, "4,%d,%d,-;NVRM: Xid (PCI:%s): %d, pid='<unknown>', name=<unknown>, something\n",
		n.seq, n.now.Sub(n.boot).Microseconds(), strings.TrimSuffix(n.bus(i), ".0"), x)
	fmt.Fprintf(&n.kmsg, "6,%d,%d,-;virtio_net virtio0: link up\n", n.seq, n.now.Sub(n.boot).Microseconds())
}

func (n *fakeNode) health(hold time.Duration) *Health {
	return NewHealth(n.gpus, HealthConfig{ProcRoot: n.proc, XidHold: hold, Now: func() time.Time { return n.now },
		ReadXids: func() ([]xid.Event, error) { return xid.Parse(strings.NewReader(n.kmsg.String()), n.boot), nil }})
}

// taints are each device's taints in what h publishes, as "key=value".
func taints(t *testing.T, h *Health) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range h.Resources(node).Pools[node].Slices[0].Devices {
		var s []string
		for _, x := range d.Taints {
			if x.Effect != resourceapi.DeviceTaintEffectNoSchedule || x.TimeAdded == nil {
				t.Errorf("%s: taint %+v", d.Name, x)
			}
			s = append(s, x.Key+"="+x.Value)
		}
		if len(s) > 0 {
			out[d.Name] = strings.Join(s, ",")
		}
	}
	return out
}

func expect(t *testing.T, h *Health, changed, wantChanged bool, want map[string]string) {
	t.Helper()
	if changed != wantChanged {
		t.Errorf("changed %v, want %v", changed, wantChanged)
	}
	got := taints(t, h)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("taints %v, want %v", got, want)
	}
}

func TestHealthXid(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	n.xid(0, 79) // before the plugin started: not counted
	n.now = n.now.Add(time.Minute)
	h := n.health(0)
	expect(t, h, h.Check(ctx), false, map[string]string{})

	n.now = n.now.Add(time.Second)
	n.xid(1, 31) // a program's fault: the GPU is fine
	n.xid(0, 43)
	expect(t, h, h.Check(ctx), false, map[string]string{})

	n.xid(1, 48)
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-1": TaintXid + "=48"})
	n.now = n.now.Add(24 * time.Hour) // kept until a restart
	expect(t, h, h.Check(ctx), false, map[string]string{"gpu-1": TaintXid + "=48"})

	n.xid(1, 95) // the latest is the one shown
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-1": TaintXid + "=95"})

	// a restarted plugin does not count what came before it
	n.now = n.now.Add(time.Second)
	h = n.health(0)
	expect(t, h, h.Check(ctx), false, map[string]string{})
}

func TestHealthXidHold(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	n.xid(0, 94) // before the plugin started: counted for its hold
	n.now = n.now.Add(time.Minute)
	h := n.health(time.Hour)
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-0": TaintXid + "=94"})
	n.now = n.now.Add(58 * time.Minute)
	expect(t, h, h.Check(ctx), false, map[string]string{"gpu-0": TaintXid + "=94"})
	n.now = n.now.Add(time.Minute)
	expect(t, h, h.Check(ctx), true, map[string]string{})
}

func TestHealthGone(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	h := n.health(0)
	expect(t, h, h.Check(ctx), false, map[string]string{})
	n.unplug(1)
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-1": TaintGone + "="})
	at := h.Taints("gpu-1")[0].TimeAdded
	n.now = n.now.Add(time.Minute)
	expect(t, h, h.Check(ctx), false, map[string]string{"gpu-1": TaintGone + "="})
	if got := h.Taints("gpu-1")[0].TimeAdded; !got.Equal(at) {
		t.Errorf("the taint's time moved from %v to %v", at, got)
	}
	// an Xid of a GPU that is gone still names it by its bus
	n.xid(1, 79)
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-1": TaintGone + "=," + TaintXid + "=79"})
	n.plug(1)
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-1": TaintXid + "=79"})
}

func TestHealthBack(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	h := n.health(0)
	n.unplug(0)
	expect(t, h, h.Check(ctx), true, map[string]string{"gpu-0": TaintGone + "="})
	n.plug(0)
	expect(t, h, h.Check(ctx), true, map[string]string{})
}

func TestHealthReports(t *testing.T) {
	n := newFakeNode(t)
	h := NewHealth(n.gpus, HealthConfig{ProcRoot: n.proc, Now: func() time.Time { return n.now }, Resend: time.Hour,
		ReadXids: func() ([]xid.Event, error) { return nil, xid.ErrUnreadable }})
	d := &Driver{Node: node, GPUs: n.gpus, Health: h}
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error)
	go func() { done <- d.WatchHealthStatus(ctx, reports) }()
	health := func() string {
		r := <-reports
		var s []string
		for _, d := range r.Devices {
			s = append(s, d.DeviceName+":"+string(d.Health))
		}
		return strings.Join(s, " ")
	}
	if got := health(); got != "gpu-0:Unknown gpu-1:Unknown" {
		t.Errorf("before a check: %s", got)
	}
	h.Check(ctx)
	if got := health(); got != "gpu-0:Healthy gpu-1:Healthy" {
		t.Errorf("checked: %s", got)
	}
	h.Check(ctx) // unchanged: nothing sent until Resend
	n.unplug(0)
	h.Check(ctx)
	if got := health(); got != "gpu-0:Unhealthy gpu-1:Healthy" {
		t.Errorf("gpu-0 gone: %s", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if err := (&Driver{}).WatchHealthStatus(ctx, reports); err != kubeletplugin.ErrHealthNotSupported {
		t.Errorf("without a monitor: %v", err)
	}
}
