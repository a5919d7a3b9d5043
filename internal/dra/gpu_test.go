// Tests of the prepare path on the node's real GPU 0, over the kubelet's
// gRPC socket: a tenant in each claim's container runs on its partition.

package dra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/carve-gpu/carve/internal/dra/dratest"
	"github.com/carve-gpu/carve/internal/gputest"
	"github.com/carve-gpu/carve/internal/mps"
)

// tenantRun is what experiments/dra/tenant.cu prints.
type tenantRun struct {
	Claim    string  `json:"claim"`
	Phase    string  `json:"phase"`
	TPCs     int     `json:"tpcs"`
	SMsSeen  int     `json:"sms_seen"`
	SMIDs    []int   `json:"smids"`
	Launches int     `json:"launches"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Error    string  `json:"error"`
}

// TestGPUClaims: the plugin's prepare path for real on the node's GPU 0,
// over the kubelet's gRPC socket, then a tenant started in each claim's
// container (the CDI edits applied by hand): alone, then both at once
// under carve's MPS. Each sees its claim's SMs, runs on as many, and runs
// as fast beside the other as alone (under MPS %smid counts from 0 in each
// client, so the time is what shows that the two share no SM). Needs CARVE_BIN (bin/carve,
// with libcarve.so beside it), CARVE_DRA_TENANT (tenant.cu built) and
// carve's MPS running in CARVE_MPS_DIR; writes runs.json to CARVE_DRA_OUT.
// With CARVE_DRA_DAEMON set, carve daemon runs over the claims meanwhile.
func TestGPUClaims(t *testing.T) {
	gputest.Need(t)
	carve, tenant := os.Getenv("CARVE_BIN"), os.Getenv("CARVE_DRA_TENANT")
	daemon := mps.Daemon{Root: os.Getenv("CARVE_MPS_DIR")}
	if carve == "" || tenant == "" || !daemon.Running() {
		t.Fatal("needs CARVE_BIN, CARVE_DRA_TENANT and carve's MPS running in CARVE_MPS_DIR")
	}
	gpus, err := FindGPUs(carve)
	if err != nil {
		t.Fatal(err)
	}
	td := newTestDriver(t)
	td.GPUs, td.Present = gpus[:1], nil
	if td.Paths.Shim, err = InstallShim(filepath.Join(filepath.Dir(carve), "libcarve.so"), td.Paths.RuntimeDir); err != nil {
		t.Fatal(err)
	}
	td.Paths.MPS = daemon
	dir := t.TempDir()
	s := Sockets{PluginDir: filepath.Join(dir, "plugin"), RegistrarDir: filepath.Join(dir, "registry")}
	os.MkdirAll(s.RegistrarDir, 0o750)
	k, _ := serve(t, td, s)

	live := td.GPUs[0].Topology.Live().Count()
	sizes := map[string]int{"a": live / 3, "b": 2 * live / 3}
	a := td.claim(t, "a", int64(sizes["a"]), `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","class":"ls"}`)
	b := td.claim(t, "b", int64(sizes["b"]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := k.dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claimRef(a), claimRef(b)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*resourceapi.ResourceClaim{a, b} {
		if r := resp.Claims[string(c.UID)]; r == nil || r.Error != "" {
			t.Fatalf("prepare %s: %+v", c.Name, r)
		}
	}
	reserved := td.reserved(t)
	t.Logf("reserved %v", reserved)
	if os.Getenv("CARVE_DRA_DAEMON") != "" { // carve daemon over the driver's runtime directory: it touches MPS for the claims' processes
		d := exec.Command(carve, "daemon", "--listen", "127.0.0.1:0", "--interval", "100ms")
		d.Env = append(os.Environ(), "CARVE_RUNTIME_DIR="+td.Paths.RuntimeDir, mps.VarDir+"="+daemon.Root)
		d.Stderr = os.Stderr
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	}

	var runs []tenantRun
	phase := func(phaseName string, claims ...*resourceapi.ResourceClaim) map[string]tenantRun {
		start := float64(time.Now().Add(3*time.Second).UnixNano()) / 1e9
		cmds := map[string]*exec.Cmd{}
		outs := map[string]*bytes.Buffer{}
		for _, c := range claims {
			cmd := claimCommand(t, td, string(c.UID), tenant, fmt.Sprintf("%.3f", start), "4")
			outs[c.Name] = &bytes.Buffer{}
			cmd.Stdout, cmd.Stderr = outs[c.Name], os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[c.Name] = cmd
		}
		got := map[string]tenantRun{}
		for name, cmd := range cmds {
			err := cmd.Wait()
			var r tenantRun
			if jerr := json.Unmarshal(outs[name].Bytes(), &r); jerr != nil || err != nil || r.Error != "" {
				t.Fatalf("claim %s: %v %v: %s", name, err, jerr, outs[name])
			}
			r.Claim, r.Phase, r.TPCs = name, phaseName, sizes[name]
			got[name] = r
			runs = append(runs, r)
			t.Logf("%s: claim %s, %d TPCs: sees %d SMs, ran on %d, p50 %.3f ms p99 %.3f ms (%d launches)",
				r.Phase, name, r.TPCs, r.SMsSeen, len(r.SMIDs), r.P50, r.P99, r.Launches)
		}
		return got
	}
	alone := map[string]tenantRun{}
	for _, c := range []*resourceapi.ResourceClaim{a, b} {
		alone[c.Name] = phase("alone", c)[c.Name]
	}
	together := phase("together", a, b)

	for name, tpcs := range sizes {
		for _, r := range []tenantRun{alone[name], together[name]} {
			if r.SMsSeen != 2*tpcs || len(r.SMIDs) != 2*tpcs {
				t.Errorf("claim %s (%s) of %d TPCs: sees %d SMs, ran on %d", name, r.Phase, tpcs, r.SMsSeen, len(r.SMIDs))
			}
		}
		if slow := together[name].P50 / alone[name].P50; slow > 1.05 {
			t.Errorf("claim %s: p50 %.3f ms beside the other, %.3f alone (%.2fx)", name, together[name].P50, alone[name].P50, slow)
		}
	}
	k.unprepare(ctx, t, td, a, b)
	servers, _ := daemon.Query("get_server_list")
	for _, srv := range strings.Fields(servers) {
		if clients, _ := daemon.Query("get_client_list " + srv); strings.TrimSpace(clients) != "" {
			t.Errorf("MPS server %s still has clients %q", srv, clients)
		}
	}
	if out := os.Getenv("CARVE_DRA_OUT"); out != "" {
		b, _ := json.MarshalIndent(map[string]any{"gpu": td.GPUs[0].Topology.UUID, "reserved": fmt.Sprint(reserved), "runs": runs}, "", " ")
		if err := os.WriteFile(filepath.Join(out, "runs.json"), b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// claimCommand runs argv in claim uid's container: in namespaces of its
// own where this machine allows them, else with the edits applied by hand.
func claimCommand(t *testing.T, td *testDriver, uid string, argv ...string) *exec.Cmd {
	t.Helper()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	devices := []string{CDIDeviceID(uid)}
	if err := dratest.Available(); err != nil {
		t.Logf("%v: applying the CDI edits by hand", err)
		cmd, err := dratest.Direct(td.Paths.CDIDir, devices, env, argv...)
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	cmd, _, err := dratest.Command(td.Paths.CDIDir, devices, env, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}
