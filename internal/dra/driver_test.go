// Tests of preparing and unpreparing claims (driver.go, prepare.go,
// state.go) on the recorded H100 with a fake API: disjoint TPCs, idempotent
// prepares, bad claims, BE claims and policies, GPUs gone, the sweep, and
// concurrent prepares; and testDriver, the other tests' driver.

package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

const node = "node-a"

// testDriver is a driver for the recorded H100 on node-a, with its runtime
// and CDI directories in a temporary directory and claims in a fake API.
type testDriver struct {
	*Driver
	client *fake.Clientset
	gone   map[string]bool // UUIDs of GPUs that left
}

func newTestDriver(t *testing.T) *testDriver {
	t.Helper()
	dir := t.TempDir()
	shim := filepath.Join(dir, "libcarve.so")
	os.WriteFile(shim, []byte("not a library"), 0o755)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-a-uid"}}
	td := &testDriver{client: fake.NewClientset(n), gone: map[string]bool{}}
	td.Driver = &Driver{
		Node: node,
		GPUs: []GPU{{Index: 0, Topology: topotest.H100(t)}},
		Paths: Paths{RuntimeDir: filepath.Join(dir, "run"), CDIDir: filepath.Join(dir, "cdi"), Shim: shim,
			MPS: mps.Daemon{Root: filepath.Join(dir, "mps")}, GPUDevice: "nvidia.com/gpu={uuid}"},
		Client: td.client,
		Present: func(uuid string) error {
			if td.gone[uuid] {
				return fmt.Errorf("GPU %s has gone", uuid)
			}
			return nil
		},
	}
	os.MkdirAll(td.Paths.RuntimeDir, 0o700)
	return td
}

// claim is an allocated claim for tpcs TPCs of gpu-0 (none: tpcs < 0) with
// the given opaque configs of the claim, created in the fake API.
func (td *testDriver) claim(t *testing.T, name string, tpcs int64, configs ...string) *resourceapi.ResourceClaim {
	t.Helper()
	uid := types.UID("uid-" + name)
	share := types.UID("share-" + name)
	res := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: DriverName, Pool: node, Device: "gpu-0", ShareID: &share}
	if tpcs >= 0 {
		res.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{CapacityTPCs: *resource.NewQuantity(tpcs, resource.DecimalSI)}
	}
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{res}},
		}},
	}
	for _, cfg := range configs {
		c.Status.Allocation.Devices.Config = append(c.Status.Allocation.Devices.Config, resourceapi.DeviceAllocationConfiguration{
			Source: resourceapi.AllocationConfigSourceClaim,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: DriverName, Parameters: runtimeRaw(cfg)}},
		})
	}
	if err := td.client.Tracker().Add(c); err != nil { // as the API has it, not as a call of the plugin's
		t.Fatal(err)
	}
	return c
}

// prepare prepares claims and returns their results by name.
func (td *testDriver) prepare(t *testing.T, claims ...*resourceapi.ResourceClaim) map[string]kubeletplugin.PrepareResult {
	t.Helper()
	got, err := td.PrepareResourceClaims(context.Background(), claims)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		r, ok := got[c.UID]
		if !ok {
			t.Fatalf("no result for claim %s", c.Name)
		}
		out[c.Name] = r
	}
	return out
}

// reserved are the TPCs of each reserved claim, by claim name.
func (td *testDriver) reserved(t *testing.T) map[string]partition.Set {
	t.Helper()
	claims, pending, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil || len(pending) > 0 {
		t.Fatalf("claims: %v, pending %v", err, pending)
	}
	out := map[string]partition.Set{}
	for _, c := range claims {
		out[strings.TrimPrefix(c.Name(), "ns/")] = partition.FromMask(td.GPUs[0].Topology, c.Root.Mask)
	}
	return out
}

// specs are the CDI spec files in the driver's directory.
func (td *testDriver) specs(t *testing.T) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(td.Paths.CDIDir, "*"))
	return names
}

// readyCondition is the Ready condition in claim's status, from the fake API.
func (td *testDriver) readyCondition(t *testing.T, c *resourceapi.ResourceClaim) (*metav1.Condition, *Status) {
	t.Helper()
	cur, err := td.client.ResourceV1().ResourceClaims(c.Namespace).Get(context.Background(), c.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cur.Status.Devices {
		if d.Driver != DriverName {
			continue
		}
		var st *Status
		if d.Data != nil {
			st = &Status{}
			if err := json.Unmarshal(d.Data.Raw, st); err != nil {
				t.Fatal(err)
			}
		}
		for _, cond := range d.Conditions {
			if cond.Type == ConditionReady {
				return &cond, st
			}
		}
	}
	return nil, nil
}

// TestPrepareTwoClaims: two claims on one GPU get disjoint TPCs, CDI specs
// that the CDI library accepts and that put the shim, the claim's
// directory and its partition into a container, and a Ready status that
// names their TPCs.
func TestPrepareTwoClaims(t *testing.T) {
	td := newTestDriver(t)
	ls := td.claim(t, "ls", 16, `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`)
	plain := td.claim(t, "plain", 40)
	got := td.prepare(t, ls, plain)
	for name, r := range got {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
		want := []string{"carve.dev/claim=uid-" + name, "nvidia.com/gpu=" + td.GPUs[0].Topology.UUID}
		if len(r.Devices) != 1 || strings.Join(r.Devices[0].CDIDeviceIDs, " ") != strings.Join(want, " ") ||
			r.Devices[0].DeviceName != "gpu-0" || r.Devices[0].PoolName != node || *r.Devices[0].ShareID != types.UID("share-"+name) {
			t.Errorf("%s: devices %+v, want CDI devices %v", name, r.Devices, want)
		}
	}
	sets := td.reserved(t)
	if len(sets["ls"]) != 16 || len(sets["plain"]) != 40 || len(sets["ls"].Intersect(sets["plain"])) != 0 {
		t.Fatalf("reserved %v", sets)
	}

	cache, err := cdi.NewCache(cdi.WithSpecDirs(td.Paths.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	if errs := cache.GetErrors(); len(errs) > 0 {
		t.Fatalf("the CDI library finds errors in the specs: %v", errs)
	}
	spec := &oci.Spec{Process: &oci.Process{Env: []string{"PATH=/bin"}}}
	if _, err := cache.InjectDevices(spec, "carve.dev/claim=uid-ls"); err != nil {
		t.Fatal(err)
	}
	env := strings.Join(spec.Process.Env, " ")
	for _, want := range []string{"LD_PRELOAD=" + ContainerShim, "CARVE_CTL_DIR=" + ContainerDir, "CARVE_CTL_ROOT=" + ContainerDir + "/root",
		"CUDA_MPS_PIPE_DIRECTORY=" + ContainerDir + "/no-mps"} {
		if !strings.Contains(env, want) {
			t.Errorf("container env %q lacks %s", env, want)
		}
	}
	mounts := map[string]oci.Mount{}
	for _, m := range spec.Mounts {
		mounts[m.Destination] = m
	}
	claimDir, _ := ctl.ClaimDir(td.Paths.RuntimeDir, "uid-ls")
	if m := mounts[ContainerDir]; m.Source != claimDir {
		t.Errorf("claim directory mount %+v, want from %s", m, claimDir)
	}
	if m := mounts[ContainerShim]; m.Source != td.Paths.Shim || !strings.Contains(strings.Join(m.Options, ","), "ro") {
		t.Errorf("shim mount %+v", m)
	}

	cond, st := td.readyCondition(t, ls)
	if cond == nil || cond.Status != metav1.ConditionTrue || st == nil || st.TPCs != sets["ls"].String() || st.Count != 16 || st.SMs != 32 || st.Class != "ls" {
		t.Errorf("status of the LS claim: %+v %+v", cond, st)
	}
}

// TestPrepareIsIdempotent: preparing a claim again, by the same driver or
// by a new one (a restarted plugin), gives the same TPCs and devices.
func TestPrepareIsIdempotent(t *testing.T) {
	td := newTestDriver(t)
	a := td.claim(t, "a", 20)
	first := td.prepare(t, a)["a"]
	before := td.reserved(t)["a"]
	again := td.prepare(t, a)["a"]
	restarted := &Driver{Node: td.Node, GPUs: td.GPUs, Paths: td.Paths, Present: td.Present}
	if err := restarted.Sweep(); err != nil {
		t.Fatal(err)
	}
	res, err := restarted.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{a})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []kubeletplugin.PrepareResult{first, again, res[a.UID]} {
		if r.Err != nil || fmt.Sprint(r.Devices) != fmt.Sprint(first.Devices) {
			t.Errorf("prepare %d: %+v, want %+v", i, r, first)
		}
	}
	if after := td.reserved(t)["a"]; after.String() != before.String() || len(td.specs(t)) != 1 {
		t.Errorf("TPCs %s after preparing again, %s before; specs %v", after, before, td.specs(t))
	}
	restarted.unprepareOK(t, a)
	if len(td.reserved(t)) != 0 || len(td.specs(t)) != 0 {
		t.Errorf("left after the restarted plugin unprepared: %v %v", td.reserved(t), td.specs(t))
	}
	restarted.unprepareOK(t, a) // again: no error
}

func (d *Driver) unprepareOK(t *testing.T, c *resourceapi.ResourceClaim) {
	t.Helper()
	got, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: c.UID}})
	if err != nil || got[c.UID] != nil {
		t.Errorf("unprepare %s: %v %v", c.Name, err, got[c.UID])
	}
}

// TestBadClaims: each bad claim fails with an error that says what is
// wrong, in the result and in the claim's status, and leaves nothing on
// the node.
func TestBadClaims(t *testing.T) {
	td := newTestDriver(t)
	big := td.claim(t, "big", 50)
	if r := td.prepare(t, big)["big"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	cfg := func(body string) string {
		return `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig"` + body + `}`
	}
	for _, tc := range []struct {
		name, want string
		tpcs       int64
		configs    []string
	}{
		{"toomany", "20 TPCs asked for, 16 of 66 are free", 20, nil},
		{"zero", "asks for 0 TPCs: a partition needs at least 1", 0, nil},
		{"class", `class "fast": want ls, be or none`, 4, []string{cfg(`,"class":"fast"`)}},
		{"typo", `unknown field "clas"`, 4, []string{cfg(`,"clas":"ls"`)}},
		{"malformed", "ClaimConfig: json: cannot unmarshal array", 4, []string{`["class", "ls"]`}},
		{"kind", `want gpu.carve.dev/v1alpha1, ClaimConfig`, 4, []string{`{"apiVersion":"gpu.carve.dev/v1","kind":"Other"}`}},
		{"tide", "inflight is for BE tenants", 4, []string{cfg(`,"class":"ls","inflight":3`)}},
		{"floorls", "beFloor is for BE tenants", 4, []string{cfg(`,"class":"ls","beFloor":8`)}},
		{"own", "own is for LS tenants", 4, []string{cfg(`,"class":"be","own":true`)}},
		{"floor", "beFloor: a BE floor of 4 TPCs: want at least 8", 4, []string{cfg(`,"class":"be","beFloor":4`)}},
		{"floorcount", "it asks for 4 TPCs and a BE floor of 8: ask for at least the floor's", 4, []string{cfg(`,"class":"be","beFloor":8`)}},
		{"share", "BE share 2: want a fraction", 4, []string{cfg(`,"class":"be","beShare":2`)}},
		{"slicels", "slice is for BE tenants", 4, []string{cfg(`,"class":"ls","slice":"200us"`)}},
		{"slice", "slice: pieces of 5µs: want 0 (never cut) or 20µs to 1s", 4, []string{cfg(`,"class":"be","slice":"5us"`)}},
		{"conns", "connections 0: want 1 to 32", 4, []string{cfg(`,"connections":0`)}},
	} {
		c := td.claim(t, tc.name, tc.tpcs, tc.configs...)
		r := td.prepare(t, c)[tc.name]
		if r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) || !strings.Contains(r.Err.Error(), "claim ns/"+tc.name) {
			t.Errorf("%s: error %v, want one naming the claim and saying %q", tc.name, r.Err, tc.want)
			continue
		}
		if cond, _ := td.readyCondition(t, c); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonFailed ||
			!strings.Contains(cond.Message, tc.want) {
			t.Errorf("%s: status condition %+v", tc.name, cond)
		}
	}
	if sets := td.reserved(t); len(sets) != 1 || len(td.specs(t)) != 1 {
		t.Errorf("left on the node: claims %v, specs %v", sets, td.specs(t))
	}
}

// TestBEClaims: a BE claim runs on every TPC, asks for none without error,
// takes its policy from its config, and keeps no LS claim out.
func TestBEClaims(t *testing.T) {
	td := newTestDriver(t)
	be := td.claim(t, "be", 0, `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"be","inflight":2,"queue":"1ms"}`)
	ls := td.claim(t, "ls", 66, `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`)
	for name, r := range td.prepare(t, be, ls) {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	claims, _, _ := ctl.Claims(td.Paths.RuntimeDir)
	for _, c := range claims {
		if c.Name() == "ns/be" && (c.Root.Class != ctl.ClassBE || c.Root.Tide.InflightMax != 2 || c.Root.Tide.Queue.String() != "1ms" ||
			c.Root.Tide.Share != ctl.DefaultPolicy.Share || len(partition.FromMask(td.GPUs[0].Topology, c.Root.Mask)) != 66) {
			t.Errorf("BE claim's reservation: %+v", c.Root)
		}
	}
}

// TestClaimPolicies: an LS claim's config may keep it to its own TPCs
// (own), a BE claim's may give it a floor (beFloor), placed off the LS
// claim's TPCs, that later claims keep off.
func TestClaimPolicies(t *testing.T) {
	td := newTestDriver(t)
	cfg := func(body string) string {
		return `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig"` + body + `}`
	}
	ls := td.claim(t, "ls", 16, cfg(`,"class":"ls","own":true`))
	be := td.claim(t, "be", 8, cfg(`,"class":"be","beShare":1,"beFloor":8`))
	for name, r := range td.prepare(t, ls, be) {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	top := td.GPUs[0].Topology
	roots := map[string]ctl.Snapshot{}
	claims, _, _ := ctl.Claims(td.Paths.RuntimeDir)
	for _, c := range claims {
		roots[c.Name()] = c.Root
	}
	lsSet := partition.FromMask(top, roots["ns/ls"].Mask)
	if p := roots["ns/ls"].Policy(); p != (ctl.Policy{Class: ctl.ClassLS, Own: true}) || len(lsSet) != 16 {
		t.Errorf("LS claim's reservation: policy %+v on %s", p, lsSet)
	}
	floor := partition.FromEnable(top, roots["ns/be"].Floor)
	if p := roots["ns/be"].Policy(); p.Class != ctl.ClassBE || p.Share != 1 || p.Floor != 8 || len(floor) != 8 || len(floor.Intersect(lsSet)) != 0 {
		t.Errorf("BE claim's reservation: policy %+v, floor %s, want 8 TPCs off the LS claim's %s", p, floor, lsSet)
	}
	big := td.claim(t, "big", 43)
	if r := td.prepare(t, big)["big"]; r.Err == nil || !strings.Contains(r.Err.Error(), "43 TPCs asked for, 42 of 66 are free") {
		t.Errorf("a claim of what the LS claim and the floor leave, and one more: %v", r.Err)
	}
	rest := td.claim(t, "rest", 42)
	if r := td.prepare(t, rest)["rest"]; r.Err != nil || len(td.reserved(t)["rest"].Intersect(floor)) != 0 {
		t.Errorf("a claim beside the floor: %v, %s", r.Err, td.reserved(t)["rest"])
	}
}

// TestGPUGone: a claim for a GPU that left the node, or that the node never
// had, fails and says so.
func TestGPUGone(t *testing.T) {
	td := newTestDriver(t)
	c := td.claim(t, "c", 4)
	td.gone[td.GPUs[0].Topology.UUID] = true
	if r := td.prepare(t, c)["c"]; r.Err == nil || !strings.Contains(r.Err.Error(), "has gone") {
		t.Errorf("GPU gone: %v", r.Err)
	}
	delete(td.gone, td.GPUs[0].Topology.UUID)
	other := td.claim(t, "other", 4)
	other.Status.Allocation.Devices.Results[0].Device = "gpu-3"
	if r := td.prepare(t, other)["other"]; r.Err == nil || !strings.Contains(r.Err.Error(), "device gpu-3 is not on this node (it has gpu-0)") {
		t.Errorf("unknown device: %v", r.Err)
	}
	two := td.claim(t, "two", 4)
	two.Status.Allocation.Devices.Results = append(two.Status.Allocation.Devices.Results, two.Status.Allocation.Devices.Results[0])
	if r := td.prepare(t, two)["two"]; r.Err == nil || !strings.Contains(r.Err.Error(), "its requests gpu and gpu are both on gpu-0") {
		t.Errorf("two devices: %v", r.Err)
	}
	if len(td.reserved(t)) != 0 || len(td.specs(t)) != 0 {
		t.Error("a failed claim left something")
	}
}

// TestWholeGPUWithoutConsumableCapacity: where the cluster allocated the
// device whole (no consumed capacity), the claim gets every TPC.
func TestWholeGPUWithoutConsumableCapacity(t *testing.T) {
	td := newTestDriver(t)
	c := td.claim(t, "whole", -1)
	if r := td.prepare(t, c)["whole"]; r.Err != nil || len(td.reserved(t)["whole"]) != 66 {
		t.Errorf("%v %v", r.Err, td.reserved(t))
	}
}

// TestSweep: a CDI spec of a claim that is not reserved (a plugin stopped
// between the two) is removed; those of reserved claims are kept.
func TestSweep(t *testing.T) {
	td := newTestDriver(t)
	td.prepare(t, td.claim(t, "kept", 4))
	stray := filepath.Join(td.Paths.CDIDir, specName("uid-stray"))
	if err := os.WriteFile(stray, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(td.Paths.CDIDir, "nvidia.yaml")
	os.WriteFile(other, []byte("x"), 0o644)
	if err := td.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Error("the stray spec was kept")
	}
	if len(td.specs(t)) != 2 {
		t.Errorf("specs after the sweep: %v, want the reserved claim's and another vendor's", td.specs(t))
	}
}

// TestConcurrentPrepares: 40 claims of 2 TPCs prepared by as many callers
// at once (as by a kubelet and a second plugin in a rolling update) never
// share a TPC; 33 fit.
func TestConcurrentPrepares(t *testing.T) {
	td := newTestDriver(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 40 {
		c := td.claim(t, fmt.Sprintf("c%d", i), 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := td.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
			mu.Lock()
			defer mu.Unlock()
			if err == nil && res[c.UID].Err == nil {
				ok++
			}
		}()
	}
	wg.Wait()
	var union partition.Set
	for name, s := range td.reserved(t) {
		if c := union.Intersect(s); len(c) > 0 {
			t.Errorf("%s shares TPCs %s", name, c)
		}
		union = union.Union(s)
	}
	if ok != 33 || len(union) != 66 || len(td.specs(t)) != 33 {
		t.Errorf("%d prepared, %d TPCs reserved, %d specs; want 33, 66, 33", ok, len(union), len(td.specs(t)))
	}
}

func runtimeRaw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

// TestTwoGPUsAlike: on a node with two GPUs of the same live TPCs, 40-TPC
// claims on each are prepared (the TPCs of one do not count on the other),
// and each claim's status names its own GPU.
func TestTwoGPUsAlike(t *testing.T) {
	td := newTestDriver(t)
	second := topotest.H100(t)
	second.UUID = "GPU-00000000-0000-0000-0000-00000000000b"
	td.GPUs = append(td.GPUs, GPU{Index: 1, Topology: second})
	a, b := td.claim(t, "a", 40), td.claim(t, "b", 40)
	b.Status.Allocation.Devices.Results[0].Device = "gpu-1"
	for name, r := range td.prepare(t, a, b) {
		if r.Err != nil {
			t.Errorf("claim %s: %v", name, r.Err)
		}
	}
	for c, uuid := range map[*resourceapi.ResourceClaim]string{a: td.GPUs[0].Topology.UUID, b: second.UUID} {
		if cond, st := td.readyCondition(t, c); cond == nil || cond.Status != metav1.ConditionTrue || st == nil || st.GPU != uuid || st.Count != 40 {
			t.Errorf("claim %s: condition %+v, status %+v, want 40 TPCs of %s", c.Name, cond, st, uuid)
		}
	}
}
