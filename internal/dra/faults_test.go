// Tests of the driver across faults (checkpoint.go, state.go): a plugin
// killed after each step of a prepare, and a restarted plugin that adopts
// prepared claims or finds their GPU gone.

package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// The environment of the plugin that TestPluginKilled runs as
// a child process (this test binary, in TestKilledPluginChild): the
// directory with its paths and claim, and the step it is killed at.
const (
	envChildDir  = "CARVE_DRA_TEST_CHILD"
	envChildStep = "CARVE_DRA_TEST_KILL_AT"
)

// stepReserving is where the child stops inside a reservation: holding the
// placement lock, the claim's directory made and its reservation not yet
// written (what place leaves between the two).
const stepReserving = "reserving"

// TestPluginKilled: a plugin killed (SIGKILL) after each step of
// a prepare that leaves something on the node, then a new plugin on the
// same directories: the kubelet's retry prepares the claim cleanly (the
// TPCs the dead plugin reserved, once; the placement lock free), or, the
// pod gone, its unprepare leaves nothing: no reservation, no interrupted
// one, no CDI spec, no claim directory, the lock free. A plugin killed in
// the middle of an unprepare leaves nothing once the kubelet retries it.
func TestPluginKilled(t *testing.T) {
	for _, tc := range []struct {
		step                    string
		reserved, pending, spec bool // what the kill leaves
	}{
		{stepReserving, false, true, false},
		{"reserved", true, false, false},
		{"written", true, false, true},
		{"released", false, false, true}, // of an unprepare
	} {
		for _, then := range []string{"retried", "unprepared"} {
			if tc.step == "released" && then == "retried" {
				continue // the kubelet retries the unprepare
			}
			t.Run(tc.step+"/"+then, func(t *testing.T) {
				td := newTestDriver(t)
				c := td.claim(t, "c", 20, `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`)
				if tc.step == "released" {
					if r := td.prepare(t, c)["c"]; r.Err != nil {
						t.Fatal(r.Err)
					}
				}
				killPluginAt(t, td, c, tc.step)

				claims, pending, err := ctl.Claims(td.Paths.RuntimeDir)
				if err != nil {
					t.Fatal(err)
				}
				if len(claims) == 1 != tc.reserved || len(pending) == 1 != tc.pending || len(td.specs(t)) == 1 != tc.spec {
					t.Fatalf("the killed plugin left claims %v, interrupted %v, specs %v; want reserved %v, interrupted %v, spec %v",
						claims, pending, td.specs(t), tc.reserved, tc.pending, tc.spec)
				}
				left := td.reservedSet(t, "c")

				d := td.restarted(t)
				switch then {
				case "retried":
					r := d.prepareOne(t, c)
					if r.Err != nil {
						t.Fatalf("the retry after the kill: %v", r.Err)
					}
					got := td.reserved(t)
					if len(got) != 1 || len(got["c"]) != 20 || len(td.specs(t)) != 1 {
						t.Fatalf("after the retry: reserved %v, specs %v; want the claim's 20 TPCs and its spec", got, td.specs(t))
					}
					if tc.reserved && got["c"].String() != left.String() {
						t.Errorf("the retry reserved %s, the killed plugin %s: want the same", got["c"], left)
					}
					if cond := td.condition(t, c, ConditionReady); cond == nil || cond.Status != metav1.ConditionTrue {
						t.Errorf("Ready after the retry: %+v", cond)
					}
					if r := d.prepareOne(t, td.claim(t, "more", 47)); r.Err == nil || !strings.Contains(r.Err.Error(), "47 TPCs asked for, 46 of 66 are free") {
						t.Errorf("a claim of one TPC more than the retried claim left: %v", r.Err)
					}
					d.unprepareOK(t, c)
				case "unprepared": // the pod deleted meanwhile: the kubelet unprepares what it asked for
					d.unprepareOK(t, c)
				}
				td.nothingLeft(t)
			})
		}
	}
}

// killPluginAt prepares c (unprepares it, for "released") in a plugin of
// td's paths, a child process, that kills itself (SIGKILL: no deferred
// function runs, no lock is let go of but by the kernel) at step.
func killPluginAt(t *testing.T, td *testDriver, c *resourceapi.ResourceClaim, step string) {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]any{"paths.json": td.Paths, "claim.json": c} {
		b, err := json.Marshal(v)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledPluginChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChildDir+"="+dir, envChildStep+"="+step)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the plugin to kill at %s: %v\n%s", step, err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the plugin to kill at %s ended otherwise: %v\n%s", step, err, out)
	}
}

// TestKilledPluginChild is the plugin that killPluginAt kills; run alone
// it does nothing.
func TestKilledPluginChild(t *testing.T) {
	dir := os.Getenv(envChildDir)
	if dir == "" {
		t.Skip("the child process of TestPluginKilled")
	}
	d := &Driver{Node: node, GPUs: []GPU{{Index: 0, Topology: topotest.H100(t)}}, Present: func(string) error { return nil }}
	var c resourceapi.ResourceClaim
	for name, v := range map[string]any{"paths.json": &d.Paths, "claim.json": &c} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	step := os.Getenv(envChildStep)
	kill := func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	if step == stepReserving {
		if _, err := place.Lock(d.Paths.RuntimeDir, place.Timeout); err != nil {
			t.Fatal(err)
		}
		cd, err := ctl.ClaimDir(d.Paths.RuntimeDir, string(c.UID))
		if err == nil {
			err = os.MkdirAll(cd, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		kill()
	}
	stepDone = func(s string) {
		if s == step {
			kill()
		}
	}
	if step == "released" {
		res, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: c.UID}})
		t.Fatalf("unprepared (%v, %v) without reaching step %q", res, err, step)
	}
	res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{&c})
	t.Fatalf("prepared (%v, %v) without reaching step %q", res, err, step)
}

// TestRestartAdoptsPreparedClaims: a new plugin on the directories of one
// that prepared claims (an upgrade) adopts them from their reservations:
// their CDI specs stay, their TPCs and a BE claim's floor stay reserved
// (no other claim gets them), preparing them again gives what they had,
// MPS included though it stopped meanwhile, and unpreparing them frees
// their TPCs and leaves nothing.
func TestRestartAdoptsPreparedClaims(t *testing.T) {
	td := newTestDriver(t)
	td.mpsRunning(t)
	cfg := func(body string) string {
		return `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig"` + body + `}`
	}
	ls := td.claim(t, "ls", 16, cfg(`,"class":"ls"`))
	be := td.claim(t, "be", 8, cfg(`,"class":"be","beFloor":8`))
	for name, r := range td.prepare(t, ls, be) {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	before := td.reservedSet(t, "ls")
	specs := td.specs(t)
	os.Remove(filepath.Join(td.Paths.MPS.PipeDir(), "nvidia-cuda-mps-control.pid")) // MPS stops too

	d := td.restarted(t)
	if got := td.specs(t); fmt.Sprint(got) != fmt.Sprint(specs) {
		t.Fatalf("specs after the new plugin's sweep: %v, before %v", got, specs)
	}
	if r := d.prepareOne(t, td.claim(t, "big", 43)); r.Err == nil || !strings.Contains(r.Err.Error(), "43 TPCs asked for, 42 of 66 are free") {
		t.Errorf("a claim of one TPC more than the adopted claims leave: %v", r.Err)
	}
	if r := d.prepareOne(t, ls); r.Err != nil || td.reservedSet(t, "ls").String() != before.String() {
		t.Errorf("the LS claim prepared again by the new plugin: %v, TPCs %s, before %s", r.Err, td.reservedSet(t, "ls"), before)
	}
	if env := td.containerEnv(t, "ls"); !strings.Contains(env, "CUDA_MPS_PIPE_DIRECTORY="+ContainerPipe) {
		t.Errorf("the LS claim joined MPS when first prepared; prepared again its containers get %q", env)
	}
	if cond := td.condition(t, ls, ConditionMPS); cond == nil || cond.Reason != ReasonMPSJoined {
		t.Errorf("the LS claim's MPS condition after the new plugin prepared it: %+v", cond)
	}
	d.unprepareOK(t, ls)
	rest := td.claim(t, "rest", 58)
	if r := d.prepareOne(t, rest); r.Err != nil || len(td.reservedSet(t, "rest").Intersect(before)) != len(before) {
		t.Errorf("a claim of what the BE floor leaves, after the LS claim was unprepared: %v, TPCs %s", r.Err, td.reservedSet(t, "rest"))
	}
	d.unprepareOK(t, rest)
	d.unprepareOK(t, be)
	td.nothingLeft(t)
}

// restarted is a new plugin on td's directories and API, as the DaemonSet
// starts after the old one ended: its sweep done (Serve's first step).
func (td *testDriver) restarted(t *testing.T) *Driver {
	t.Helper()
	d := &Driver{Node: td.Node, GPUs: td.GPUs, Paths: td.Paths, Client: td.client, Present: td.Present}
	if err := d.Sweep(); err != nil {
		t.Fatal(err)
	}
	return d
}

// prepareOne prepares c with d and returns its result.
func (d *Driver) prepareOne(t *testing.T, c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	got, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	return got[c.UID]
}

// reservedSet is the TPCs of claim name on td's GPU, none if it is not
// reserved.
func (td *testDriver) reservedSet(t *testing.T, name string) partition.Set {
	t.Helper()
	claims, _, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.Name() == "ns/"+name {
			return partition.FromMask(td.GPUs[0].Topology, c.Root.Mask)
		}
	}
	return nil
}

// condition is the condition typ in c's status, from the fake API.
func (td *testDriver) condition(t *testing.T, c *resourceapi.ResourceClaim, typ string) *metav1.Condition {
	t.Helper()
	cur, err := td.client.ResourceV1().ResourceClaims(c.Namespace).Get(context.Background(), c.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cur.Status.Devices {
		for _, cond := range d.Conditions {
			if d.Driver == DriverName && cond.Type == typ {
				return &cond
			}
		}
	}
	return nil
}

// containerEnv is the environment claim name's CDI device gives a
// container, joined by spaces.
func (td *testDriver) containerEnv(t *testing.T, name string) string {
	t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(td.Paths.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	spec := &oci.Spec{Process: &oci.Process{}}
	if _, err := cache.InjectDevices(spec, CDIDeviceID("uid-"+name)); err != nil {
		t.Fatal(err)
	}
	return strings.Join(spec.Process.Env, " ")
}

// nothingLeft checks that no claim is reserved or half reserved in td's
// runtime directory, that no CDI spec of the driver's is left, and that the
// placement lock is free (a second's wait for it would be a holder's).
func (td *testDriver) nothingLeft(t *testing.T) {
	t.Helper()
	claims, pending, err := ctl.Claims(td.Paths.RuntimeDir)
	if err != nil || len(claims) > 0 || len(pending) > 0 {
		t.Errorf("left reserved: %v, interrupted %v (%v)", claims, pending, err)
	}
	if dirs, _ := os.ReadDir(filepath.Join(td.Paths.RuntimeDir, ctl.ClaimsDir)); len(dirs) > 0 {
		t.Errorf("left in the claims' directory: %v", dirs)
	}
	if specs := td.specs(t); len(specs) > 0 {
		t.Errorf("CDI specs left: %v", specs)
	}
	unlock, err := place.Lock(td.Paths.RuntimeDir, time.Second)
	if err != nil {
		t.Errorf("the placement lock is held: %v", err)
		return
	}
	unlock()
}

// TestRestartGPUGone: a new plugin on a node whose GPU left while a claim
// was prepared on it (its health check fails, or the node no longer lists
// it): preparing the claim again fails, saying so, in its status too, and
// keeps its reservation for its containers until the kubelet unprepares
// it; unpreparing it then leaves nothing.
func TestRestartGPUGone(t *testing.T) {
	for _, listed := range []bool{true, false} {
		td := newTestDriver(t)
		c := td.claim(t, "c", 20)
		if r := td.prepare(t, c)["c"]; r.Err != nil {
			t.Fatal(r.Err)
		}
		d := td.restarted(t)
		want := "has gone"
		if listed {
			td.gone[td.GPUs[0].Topology.UUID] = true
		} else {
			d.GPUs, want = nil, "device gpu-0 is not on this node (it has no GPU of carve's)"
		}
		if r := d.prepareOne(t, c); r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("listed %v: prepared again: %v, want an error saying %q", listed, r.Err, want)
		}
		if cond := td.condition(t, c, ConditionReady); cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, want) {
			t.Errorf("listed %v: Ready %+v", listed, cond)
		}
		if len(td.reservedSet(t, "c")) != 20 || len(td.specs(t)) != 1 {
			t.Errorf("listed %v: the claim's reservation (%s) or spec (%v) went before the kubelet unprepared it", listed, td.reservedSet(t, "c"), td.specs(t))
		}
		d.unprepareOK(t, c)
		td.nothingLeft(t)
	}
}
