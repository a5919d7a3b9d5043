// Tests of profile.go: ncu's output parsed into counters, and a program's
// times on each partition size.

package profile

import (
	"os"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

func TestParseNCU(t *testing.T) {
	// Recorded on the H100: ncu --csv --print-units base for one saxpy
	// launch (with the warp-level instruction metric of that run).
	b, err := os.ReadFile("testdata/ncu-saxpy.csv")
	if err != nil {
		t.Fatal(err)
	}
	rec := strings.ReplaceAll(string(b), "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum")
	c, err := ParseNCU([]byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	if c.DRAMBytes != 1192574464 || c.DurationNS != 432128 || c.L2Requests != 17258428 || c.Instructions != 51019776 {
		t.Errorf("counters %+v", c)
	}
	for _, bad := range []string{"", "==PROF== nothing profiled\n", `"ID","Metric Name"` + "\n" + `"0","dram__bytes.sum"` + "\n"} {
		if _, err := ParseNCU([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// two kernels: each metric summed
	lines := strings.Split(strings.TrimSpace(rec), "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, `"0",`) {
			rows = append(rows, strings.Replace(l, `"0",`, `"1",`, 1))
		}
	}
	two, err := ParseNCU([]byte(rec + strings.Join(rows, "\n") + "\n"))
	if err != nil || two.DRAMBytes != 2*1192574464 || two.Instructions != 2*51019776 {
		t.Errorf("two kernels: %+v %v", two, err)
	}
	if _, err := ParseNCU(b); err == nil || !strings.Contains(err.Error(), "smsp__thread_inst_executed.sum") {
		t.Errorf("a metric missing: %v", err)
	}
}

func TestProgramTimes(t *testing.T) {
	top := topotest.H100(t)
	var seen []string
	prefix := func(set partition.Set) []string {
		seen = append(seen, set.String())
		return []string{"sh", "-c", `sleep 0.01; exit "$0"`} // "$0" is the program's first word
	}
	sizes, err := ProgramTimes(prefix, []string{"0"}, top, []int{1, 66}, 2, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[1].TPCs != 66 || sizes[1].SMs != 132 || sizes[0].Stats.N != 2 || sizes[0].Stats.Min < 10 {
		t.Errorf("sizes %+v", sizes)
	}
	if len(seen) != 6 || seen[5] != "0-65" { // a warm-up and two timed runs per size
		t.Errorf("partitions %v", seen)
	}
	if _, err := ProgramTimes(prefix, []string{"3"}, top, []int{1}, 1, func() {}); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing program: %v", err)
	}
	if _, err := ProgramTimes(prefix, []string{"0"}, top, []int{67}, 1, func() {}); err == nil {
		t.Error("67 TPCs accepted")
	}
}
