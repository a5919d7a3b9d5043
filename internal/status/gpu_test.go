// Tests of status.go's rows for tenants on several GPUs: launches on
// another GPU that ran unmasked, and a tenant with a partition on each of
// two GPUs, in carve ls and top.

package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// TestLaunchesElsewhere: a process whose launches on another GPU ran
// unmasked says so in carve ls and top, and in the JSON rows.
func TestLaunchesElsewhere(t *testing.T) {
	const ours, other = "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17ef", "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"
	e := ctl.Entry{Snapshot: ctl.Snapshot{PID: 7, Tenant: 7, State: ctl.StateHooked, GPU: ours, Launches: 12,
		Gen: 2, AppliedGen: 2, OtherLaunches: 3, OtherGPU: other, Command: []string{"train"}}}
	r := row(e, false)
	if r.GPU != ours || r.OtherLaunches != 3 || r.OtherGPU != other {
		t.Fatalf("row %+v", r)
	}
	want := "partitioned; 3 launches UNMASKED on " + other
	var ls, top strings.Builder
	WriteTable(&ls, []Row{r}, time.Now(), nil)
	WriteTop(&top, []Row{r}, nil, time.Now(), time.Second)
	for name, out := range map[string]string{"ls": ls.String(), "top": top.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("carve %s lacks %q:\n%s", name, want, out)
		}
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"gpu":"`+ours+`"`) || !strings.Contains(string(b), `"other_gpu_launches":3,"other_gpu":"`+other+`"`) {
		t.Errorf("JSON row %s", b)
	}
	r = row(ctl.Entry{Snapshot: ctl.Snapshot{PID: 8, State: ctl.StateHooked, GPU: ours, Launches: 1, Gen: 2, AppliedGen: 2}}, false)
	ls.Reset()
	WriteTable(&ls, []Row{r}, time.Now(), nil)
	if strings.Contains(ls.String(), "UNMASKED") {
		t.Errorf("a process with no launch elsewhere:\n%s", ls.String())
	}
}

// TestTenantOfTwoGPUs: a tenant with partitions on two GPUs shows each
// GPU's TPCs, named on that GPU's cached topology: in the JSON rows, and
// in carve ls and top on a line of each GPU.
func TestTenantOfTwoGPUs(t *testing.T) {
	a, b := topotest.H100(t), topotest.Second(t)
	cache := t.TempDir()
	t.Setenv("CARVE_CACHE_DIR", cache)
	for _, top := range []*topo.Topology{a, b} {
		if err := topo.WriteCache(topo.CachePath(cache, top.UUID, top.Driver), top); err != nil {
			t.Fatal(err)
		}
	}
	mask := func(top *topo.Topology, s string) topo.Disable {
		spec, _ := partition.ParseTPCs(s)
		set, _ := spec.Resolve(top, nil)
		m, _ := partition.Mask(top, set)
		return m
	}
	e := ctl.Entry{Snapshot: ctl.Snapshot{PID: 7, Tenant: 7, State: ctl.StateHooked, GPU: a.UUID, Mask: mask(a, "0-15"), Live: a.Live(),
		SMs: 32, Gen: 2, AppliedGen: 2, Command: []string{"train"},
		More: []ctl.Part{{GPU: b.UUID, Mask: mask(b, "4-11"), Live: b.Live(), SMs: 16}}}}
	r := row(e, false)
	if r.GPU != a.UUID || r.TPCs != "0-15" || len(r.GPUs) != 2 || r.GPUs[1].GPU != b.UUID || r.GPUs[1].TPCs != "4-11" ||
		r.GPUs[1].NumTPCs != 8 || r.GPUs[1].SMs != 16 {
		t.Fatalf("row %+v", r)
	}
	var ls, top strings.Builder
	WriteTable(&ls, []Row{r}, time.Now(), nil)
	WriteTop(&top, []Row{r}, nil, time.Now(), time.Second)
	for name, out := range map[string]string{"ls": ls.String(), "top": top.String()} {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := strings.Fields(lines[len(lines)-1])
		if !strings.Contains(out, "GPU-72602ec6  0-15") || len(last) < 3 || last[0] != "GPU-5d1e2b7a" || last[1] != "4-11" || last[2] != "8" {
			t.Errorf("carve %s does not show each GPU's TPCs:\n%s", name, out)
		}
	}
	js, _ := json.Marshal(r)
	if !strings.Contains(string(js), `"gpus":[{"gpu":"`+a.UUID+`","tpcs":"0-15","num_tpcs":16,"sms":32},{"gpu":"`+b.UUID+`","tpcs":"4-11"`) {
		t.Errorf("JSON row %s", js)
	}
	if one := row(ctl.Entry{Snapshot: ctl.Snapshot{PID: 8, GPU: a.UUID, Mask: mask(a, "0-3"), Live: a.Live()}}, false); one.GPUs != nil || one.TPCs != "0-3" {
		t.Errorf("a tenant of one GPU: %+v", one)
	}
}
