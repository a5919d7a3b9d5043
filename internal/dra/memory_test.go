// Tests of claims' memory: each GPU's memory published as a consumable
// capacity (slices.go), a claim's consumed memory its processes' limit
// (prepare.go), and bad memory settings refused.

package dra

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/place"
)

const gib = 1 << 30

// TestPublishedMemory: each GPU's memory is a consumable capacity beside
// its TPCs, requested in steps of 256 MiB up to the whole (rounded down to
// a step), none by default; a GPU whose memory is not known publishes
// none.
func TestPublishedMemory(t *testing.T) {
	td := newTestDriver(t)
	d := td.GPUs[0].Device()
	c, ok := d.Capacity[CapacityMemory]
	if !ok || c.Value.Value() != 81079<<20 || d.Attributes["memory"].IntValue == nil || *d.Attributes["memory"].IntValue != 81079<<20 {
		t.Fatalf("published %+v", d)
	}
	p := c.RequestPolicy
	if p == nil || p.Default.Value() != 0 || p.ValidRange.Min.Value() != 0 || p.ValidRange.Step.Value() != MemoryStep ||
		p.ValidRange.Max.Value() != 80896<<20 {
		t.Errorf("request policy %+v", p)
	}
	unknown := *td.GPUs[0].Topology
	unknown.MemoryBytes = 0
	if _, ok := (GPU{Topology: &unknown}).Device().Capacity[CapacityMemory]; ok {
		t.Error("a GPU of unknown memory published some")
	}
}

// memClaim is td.claim with mem consumed of the GPU's memory capacity.
func (td *testDriver) memClaim(t *testing.T, name string, tpcs int64, mem string, configs ...string) *resourceapi.ResourceClaim {
	t.Helper()
	c := td.claim(t, name, tpcs, configs...)
	c.Status.Allocation.Devices.Results[0].ConsumedCapacity[CapacityMemory] = resource.MustParse(mem)
	return c
}

// mpsRunning makes td's MPS daemon seem to run: its pid file names this
// process.
func (td *testDriver) mpsRunning(t *testing.T) {
	t.Helper()
	pipe := td.Paths.MPS.PipeDir()
	os.MkdirAll(pipe, 0o700)
	if err := os.WriteFile(filepath.Join(pipe, "nvidia-cuda-mps-control.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestClaimMemory: a claim's consumed memory is its processes' limit
// under MPS, where the driver holds them to it too (the CDI spec sets it
// for the GPU as the containers see it), and that less its context's
// reserve outside MPS, so that the node counts each claim as the
// scheduler did; a config's memory may lower it (the node then counts
// the lower limit); a claim that consumed none has no limit; the claim's
// status says its limit.
func TestClaimMemory(t *testing.T) {
	td := newTestDriver(t)
	td.mpsRunning(t)
	cfg := func(body string) string {
		return `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig"` + body + `}`
	}
	claims := []*resourceapi.ResourceClaim{
		td.memClaim(t, "mps", 8, "12Gi"),
		td.memClaim(t, "own", 8, "4Gi", cfg(`,"mps":false`)),
		td.memClaim(t, "lower", 8, "16Gi", cfg(`,"memory":"10%"`)),
		td.claim(t, "none", 8),
	}
	for name, r := range td.prepare(t, claims...) {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	want := map[string]uint64{"ns/mps": 12 * gib, "ns/own": 4*gib - place.ContextReserve, "ns/lower": 8107 << 20, "ns/none": 0}
	roots, _, _ := ctl.Claims(td.Paths.RuntimeDir)
	for _, c := range roots {
		if c.Root.Memory.Limit != want[c.Name()] {
			t.Errorf("%s: limit %d, want %d", c.Name(), c.Root.Memory.Limit, want[c.Name()])
		}
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(td.Paths.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]string{"mps": "0=12G", "own": "", "lower": "0=8107M", "none": ""} {
		spec := &oci.Spec{Process: &oci.Process{}}
		if _, err := cache.InjectDevices(spec, "carve.dev/claim=uid-"+name); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, kv := range spec.Process.Env {
			if v, ok := strings.CutPrefix(kv, mps.VarPinnedMemLimit+"="); ok {
				got = v
			}
		}
		if got != env {
			t.Errorf("claim %s's containers get %s=%q, want %q", name, mps.VarPinnedMemLimit, got, env)
		}
	}
	if _, st := td.readyCondition(t, claims[0]); st == nil || st.Memory != 12*gib || !st.MPS {
		t.Errorf("the MPS claim's status: %+v", st)
	}
	// the node counts 12G, 4G and the lowered claim's 8107M: 56588M are left
	big := td.memClaim(t, "big", 4, "56Gi")
	if r := td.prepare(t, big)["big"]; r.Err == nil || !strings.Contains(r.Err.Error(), "over-committed: a limit of 56G asked for, 55.3G of the GPU's 79.2G are free") ||
		!strings.Contains(r.Err.Error(), "claim ns/own holds 4G") ||
		!strings.Contains(r.Err.Error(), "outside Kubernetes") {
		t.Errorf("a claim of more memory than is left: %v", r.Err)
	}
	if r := td.prepare(t, td.memClaim(t, "rest", 4, "55Gi"))["rest"]; r.Err != nil {
		t.Errorf("a claim of what is left: %v", r.Err)
	}
}

// TestBadClaimMemory: a memory in a config that the claim did not ask
// the scheduler for, a malformed one, and a claim outside MPS that asks
// for no more than its context's reserve fail, saying what to ask for.
func TestBadClaimMemory(t *testing.T) {
	td := newTestDriver(t)
	td.mpsRunning(t)
	cfg := func(body string) string {
		return `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig"` + body + `}`
	}
	for _, tc := range []struct {
		name, mem, config, want string
	}{
		{"unasked", "", `,"memory":"12G"`, "its config limits its memory to 12G, and it asks the scheduler for 0: ask for memory: 12Gi in its capacity request"},
		{"more", "4Gi", `,"memory":"8G"`, "asks the scheduler for 4Gi: ask for memory: 8Gi"},
		{"ctx", "4Gi", `,"memory":"4G","mps":false`, "ask for memory: 4864Mi"},
		{"small", "512Mi", `,"mps":false`, "it asks for 512Mi of memory outside MPS, where its context takes about 768Mi of it: ask for more"},
		{"zero", "4Gi", `,"memory":"0"`, `memory: memory limit "0": a limit of nothing`},
		{"pct", "4Gi", `,"memory":"150%"`, "at most 100%"},
		{"unit", "4Gi", `,"memory":"4Q"`, `unknown unit "Q"`},
		{"negative", "4Gi", `,"memory":"-4G"`, "negative"},
		{"huge", "4Gi", `,"memory":"100G"`, "more than the GPU's 79.2G"},
	} {
		var c *resourceapi.ResourceClaim
		if tc.mem == "" {
			c = td.claim(t, tc.name, 4, cfg(tc.config))
		} else {
			c = td.memClaim(t, tc.name, 4, tc.mem, cfg(tc.config))
		}
		if r := td.prepare(t, c)[tc.name]; r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, r.Err, tc.want)
		}
	}
	if len(td.reserved(t)) != 0 || len(td.specs(t)) != 0 {
		t.Errorf("left on the node: %v %v", td.reserved(t), td.specs(t))
	}
}
