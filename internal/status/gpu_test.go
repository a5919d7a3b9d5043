package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
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
