package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/shimtest"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/status"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/topo/topotest"
)

// carve runs the CLI in-process and returns stdout, stderr and the error.
func carve(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

// sandbox points carve's runtime and cache directories at temporary ones,
// with the recorded H100 topology cached, and no driver to be found.
func sandbox(t *testing.T) *topo.Topology {
	t.Helper()
	top := topotest.H100(t)
	cache := t.TempDir()
	t.Setenv("CARVE_CACHE_DIR", cache)
	t.Setenv("CARVE_RUNTIME_DIR", filepath.Join(t.TempDir(), "rt"))
	t.Setenv("CARVE_LIBCUDA", "/nonexistent/libcuda.so.1")
	t.Setenv("CARVE_MPS_DIR", t.TempDir())
	if err := topo.WriteCache(topo.CachePath(cache, top.UUID, top.Driver), top); err != nil {
		t.Fatal(err)
	}
	return top
}

func TestErrors(t *testing.T) {
	sandbox(t)
	shim := shimtest.Build(t).Shim
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--", "true"}, "name a partition with one of -t, -g or -n"},
		{[]string{"run", "-t", "0", "-g", "1", "--", "true"}, "exclude each other"},
		{[]string{"run", "-t", "5-3", "--", "true"}, "range runs backwards"},
		{[]string{"run", "-n", "0", "--", "true"}, "positive integer"},
		{[]string{"run", "-t", "0", "--", "/nonexistent/prog"}, "no such file"},
		{[]string{"run", "-t", "0", "--shim", "/nonexistent/libcarve.so", "--", "true"}, "shim /nonexistent/libcarve.so"},
		{[]string{"run", "-t", "0", "--shim", shim, "--", "true"}, "libcuda.so.1 could not be loaded"},
		{[]string{"run", "-t", "0"}, "carve run needs a command"},
		{[]string{"run", "-t", "0", "--connections", "0", "--", "true"}, "want 1 to 32"},
		{[]string{"ls", "-o", "yaml"}, "unknown output format"},
		{[]string{"set", "-t", "0"}, "name the process with -p PID"},
		{[]string{"set", "-p", "999999999", "-t", "0"}, "not partitioned by carve"},
		{[]string{"topo", "extra"}, "unknown command"},
		{[]string{"topo"}, "libcuda.so.1 could not be loaded"},
		{[]string{"mps", "stop"}, "MPS is not running"},
		{[]string{"bench", "granularity", "--reps", "0"}, "want at least 1"},
		{[]string{"bench", "enforcement", "--share", "1.2"}, "want a fraction between 0 and 1"},
		{[]string{"bench", "enforcement", "--samples", "0"}, "want at least 1"},
		{[]string{"bench", "granularity", "--mechanisms", ""}, "--mechanisms is empty"},
		{[]string{"bench", "granularity", "--mechanisms", "carve,mig"}, `unknown mechanism "mig"`},
		{[]string{"bench", "granularity"}, "libcuda.so.1 could not be loaded"},
		{[]string{"bench", "enforcement", "--victims", "sgemm,bert"}, `unknown victim "bert"`},
		{[]string{"bench", "enforcement", "--victims", "torch", "--python", "/nonexistent/python"}, "leave it out with --victims sgemm"},
		{[]string{"bench", "overhead", "--launches", "0"}, "want at least 1"},
		{[]string{"bench", "overhead", "--cpu", "100000"}, "this machine has CPUs"},
		{[]string{"bench", "overhead", "--share", "0"}, "want a fraction between 0 and 1"},
		{[]string{"bench", "overhead"}, "libcuda.so.1 could not be loaded"},
		{[]string{"bench", "isolation", "--reps", "0"}, "want at least 1"},
		{[]string{"bench", "isolation", "-o", "yaml"}, "unknown output format"},
		{[]string{"bench", "report", "/nonexistent/r.json"}, "no such file"},
		{[]string{"run", "--ls", "--be", "-n", "4", "--", "true"}, "--ls and --be exclude each other"},
		{[]string{"run", "--own", "-n", "4", "--", "true"}, "--own is for LS tenants"},
		{[]string{"run", "--be", "--be-share", "2", "--", "true"}, "BE share 2: want a fraction"},
		{[]string{"run", "--be", "--epoch", "10us", "--", "true"}, "epoch 10µs: want 1ms"},
		{[]string{"run", "--ls", "--", "true"}, "name a partition"},
		{[]string{"top", "--interval", "1ms"}, "--interval 1ms: want 10ms to 1h0m0s"},
		{[]string{"top", "--interval", "2h"}, "--interval 2h0m0s: want 10ms to 1h0m0s"},
		{[]string{"top", "--count", "-1"}, "--count: at least 0"},
		{[]string{"daemon", "--no-mps", "--listen", "127.0.0.1:0", "--interval", "1ns"}, "--interval 1ns: want 10ms to 1h0m0s"},
		{[]string{"daemon", "--no-mps", "--listen", "127.0.0.1:0", "--interval", "-1s"}, "--interval -1s: want 10ms to 1h0m0s"},
		{[]string{"bench", "serve", "--ls", "vgg:graph"}, `LS "vgg:graph"`},
		{[]string{"bench", "kernels"}, "name the records to read: JOB=FILE"},
		{[]string{"bench", "kernels", "bert=/nonexistent/bert.*.tsv"}, "no such file (records of job bert"},
		{[]string{"bench", "kernels", "-o", "yaml", "x=y"}, "unknown output format"},
		{[]string{"bench", "kernels", "--sms", "0", "x=y"}, "0 SMs: want at least 1"},
		{[]string{"bench", "serve", "--ls", "llm:compiled"}, "MODEL one of resnet50, mobilenet_v3_large, bert, llm"},
		{[]string{"bench", "serve", "--be", "gpt-train"}, "want one of densenet161, resnet50-train, transformer-train"},
		{[]string{"bench", "serve", "--ls", "llm:graph", "--be", "transformer-train", "--python", "/nonexistent/python"}, "needs torch, torchvision, transformers"},
		{[]string{"bench", "serve", "--tide", "8:0.05"}, "want INFLIGHT:QUEUE:SHARE"},
		{[]string{"bench", "serve", "--tide", "8:300us:1:50:mine"}, "want " + tideForm},
		{[]string{"bench", "serve", "--tide", "8:300us:1:0"}, "want " + tideForm},
		{[]string{"bench", "serve", "--tide", "8:300us:1:floor=0"}, "want " + tideForm},
		{[]string{"bench", "serve", "--tide", "8:300us:1:own:50"}, "want " + tideForm},
		{[]string{"bench", "serve", "--tide", "8:300us:1:own:own"}, "want " + tideForm},
		{[]string{"run", "--be-floor", "4", "-n", "4", "--", "true"}, "--be-floor is for BE tenants"},
		{[]string{"run", "--be", "--be-floor", "-1", "--", "true"}, "floor -1 TPCs"},
		{[]string{"bench", "serve", "--rates", "fast"}, `"fast": want a number`},
		{[]string{"bench", "serve", "--orders", "ls-first,both"}, `order "both": want ls-first or be-first`},
		{[]string{"bench", "serve", "--orders", "be-first,be-first"}, `order "be-first" given twice`},
		{[]string{"run", "-n", "4", "--mem", "0", "--", "true"}, `memory limit "0": a limit of nothing`},
		{[]string{"run", "-n", "4", "--mem=-1G", "--", "true"}, `memory limit "-1G": a negative size`},
		{[]string{"run", "-n", "4", "--mem", "12X", "--", "true"}, `unknown unit "X"`},
		{[]string{"run", "-n", "4", "--mem", "twelve", "--", "true"}, "want a size (512M, 12G"},
		{[]string{"run", "-n", "4", "--mem", "101%", "--", "true"}, "at most 100%"},
		{[]string{"set", "-p", "1", "--mem", "0%"}, "a limit of nothing"},
		{[]string{"set", "-p", "999999999", "--mem", "1G"}, "not partitioned by carve"},
	} {
		_, _, err := carve(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("carve %s: err %v, want one with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := carve(t, "version")
	if err != nil || !strings.HasPrefix(out, "carve ") {
		t.Errorf("version: %q %v", out, err)
	}
}

func TestLsAndSet(t *testing.T) {
	top := sandbox(t)
	dir, err := ctl.Dir()
	if err != nil {
		t.Fatal(err)
	}
	// this test process plays the partitioned program on TPCs 0-3
	mask, _ := partition.Mask(top, partition.Set{0, 1, 2, 3})
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Mask: mask, Live: top.Live(), Comm: []string{"python3", "serve.py"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// a neighbour on TPCs 10-19
	nb := exec.Command("sleep", "30")
	if err := nb.Start(); err != nil {
		t.Fatal(err)
	}
	defer nb.Process.Kill()
	nmask, _ := partition.Mask(top, partition.Set{10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	nh, err := ctl.Create(dir, ctl.Init{PID: nb.Process.Pid, Mask: nmask, Live: top.Live(), Comm: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()

	out, _, err := carve(t, "ls", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []status.Row
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 2 || rows[0].PID != os.Getpid() && rows[1].PID != os.Getpid() {
		t.Fatalf("ls rows %+v", rows)
	}
	for _, r := range rows {
		want := map[int]string{os.Getpid(): "0-3", nb.Process.Pid: "10-19"}[r.PID]
		if r.TPCs != want || r.State != "starting" {
			t.Errorf("pid %d: TPCs %q state %q, want %q starting", r.PID, r.TPCs, r.State, want)
		}
	}

	pid := itoa(os.Getpid())
	if _, _, err := carve(t, "set", "-p", pid, "-t", "8-12"); err == nil ||
		!strings.Contains(err.Error(), "TPCs 10-12 are also in the partition of pid "+itoa(nb.Process.Pid)) ||
		!strings.Contains(err.Error(), "--share") {
		t.Errorf("set onto another partition's TPCs: %v", err)
	}
	out, stderr, err := carve(t, "set", "-p", pid, "-t", "8-12", "--share")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "TPCs 0-3 -> 8-12 (5 of 66)") {
		t.Errorf("set said %q", out)
	}
	if !strings.Contains(stderr, "TPCs 10-12 are also in the partition of pid "+itoa(nb.Process.Pid)) {
		t.Errorf("no overlap note: %q", stderr)
	}
	if strings.Contains(stderr, "never finished") {
		t.Errorf("a warning about few TPCs where the partition grew: %q", stderr)
	}
	if got := partition.FromMask(top, h.Snapshot().Mask).String(); got != "8-12" {
		t.Errorf("block now holds TPCs %s", got)
	}

	// -n places around the neighbour's TPCs, and says when they do not fit
	if _, _, err := carve(t, "set", "-p", pid, "-n", "57"); err == nil || !strings.Contains(err.Error(), "57 TPCs asked for, 56 of 66 are free") {
		t.Errorf("set -n 57 beside 10 busy TPCs: %v", err)
	}
	if _, _, err := carve(t, "set", "-p", pid, "-n", "9"); err != nil {
		t.Fatal(err)
	}
	got := partition.FromMask(top, h.Snapshot().Mask)
	if len(got) != 9 || len(got.Intersect(partition.Set{10, 11, 12, 13, 14, 15, 16, 17, 18, 19})) != 0 {
		t.Errorf("-n 9 gave %s, overlapping the neighbour", got)
	}
	// shrinking a program below ctl.NarrowMin TPCs comes with a warning
	if _, stderr, err := carve(t, "set", "-p", pid, "-t", "0-3"); err != nil || !strings.Contains(stderr, "never finished on fewer than 8 TPCs") {
		t.Errorf("set from 9 TPCs to 4: %v, said %q; want a warning", err, stderr)
	}

	// a dead process's block is dropped by ls
	nb.Process.Kill()
	nb.Wait()
	out, _, err = carve(t, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "sleep 30") || !strings.Contains(out, "python3 serve.py") {
		t.Errorf("ls after the neighbour died:\n%s", out)
	}
	if _, _, err := carve(t, "set", "-p", itoa(nb.Process.Pid), "-t", "0"); err == nil {
		t.Error("set on a dead process succeeded")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestBenchReport reads a saved result back: its table on stdout, its plots
// drawn again beside it.
func TestBenchReport(t *testing.T) {
	sandbox(t)
	dir := t.TempDir()
	r := &report.Result{Benchmark: "enforcement", Device: "test GPU", Driver: "1.2.3",
		Params: map[string]any{"share": 0.5, "scaled_alone_ms": map[string]any{"sgemm": 2.0}},
		Series: []report.Series{{Mechanism: "carve 33/33 TPCs + memory", Victim: "sgemm", Measured: true,
			Points: []report.Point{{Stats: stats.Summarize([]float64{2, 2.1, 2.2})}}}}}
	path, err := r.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := carve(t, "bench", "report", path)
	if err != nil {
		t.Fatal(err)
	}
	// p99 of 2, 2.1, 2.2 is 2.198: +9.9% over the 2.0 ms reference
	for _, want := range []string{"carve 33/33 TPCs + memory", "+9.9%", "driver 1.2.3"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, ext := range []string{"png", "svg"} {
		if _, err := os.Stat(filepath.Join(dir, "enforcement."+ext)); err != nil {
			t.Error(err)
		}
	}
}

// TestBenchKernels reads the synthetic records of internal/bench's tests
// (hand-written, not measured) as two jobs, in Markdown and in JSON.
func TestBenchKernels(t *testing.T) {
	fixture := filepath.Join("..", "..", "internal", "bench", "testdata", "kernels-synthetic.tsv")
	out, _, err := carve(t, "bench", "kernels", "--after-gap", "1s", "--top", "2", "a="+fixture, "b="+fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| a | 7 |", "| b | 7 |", "62.5%", "### b: top kernels by time", "| gemm_many<128> | many blocks | 2 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("kernels lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "| persistent_gemm_kernel |") != 2 || strings.Contains(out, "sm90_cluster_gemm_kernel") {
		t.Errorf("--top 2: want the two top kernels a job:\n%s", out)
	}
	out, _, err = carve(t, "bench", "kernels", "-o", "json", "--sms", "66", fixture)
	if err != nil {
		t.Fatal(err)
	}
	var sums []bench.KernelSummary
	if err := json.Unmarshal([]byte(out), &sums); err != nil || len(sums) != 1 || sums[0].Job != "kernels-synthetic" || sums[0].Kernels != 9 ||
		sums[0].Limits.SMs != 66 || len(sums[0].Top) != 6 { // on 66 SMs both persistent_gemm_kernel runs are many blocks: one row
		t.Errorf("-o json: %v %+v", err, sums)
	}
}

func TestParseTide(t *testing.T) {
	got, err := parseTide([]string{"8:300us:0.05", "4:0s:1:50:own", "8:300us:1:floor=8", "2:0s:0.5:20:floor=12", "8:300us:0:slice=200us"})
	be := func(n int, q time.Duration, share float64, floor int) ctl.Policy {
		return ctl.Policy{Class: ctl.ClassBE, Inflight: n, Queue: q, Share: share, Floor: floor, Epoch: ctl.DefaultPolicy.Epoch}
	}
	ls := ctl.Policy{Class: ctl.ClassLS}
	own := ctl.Policy{Class: ctl.ClassLS, Own: true}
	want := []bench.TideSetting{{BE: be(8, 300*time.Microsecond, 0.05, 0), LS: ls},
		{BE: be(4, 0, 1, 0), LS: own, LSTPCs: 50},
		{BE: be(8, 300*time.Microsecond, 1, 8), LS: ls},
		{BE: be(2, 0, 0.5, 12), LS: ls, LSTPCs: 20},
		{BE: func() ctl.Policy { p := be(8, 300*time.Microsecond, 0, 0); p.Slice = 200 * time.Microsecond; return p }(), LS: ls}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseTide: %+v, %v; want %+v", got, err, want)
	}
	// the rules of carve run's flags hold for them too
	for in, msg := range map[string]string{"8:300us:1:floor=4": "floor of 4 TPCs: want at least 8",
		"8:300us:2": "BE share 2: want a fraction", "-1:0s:1": "kernels in flight -1", "8:-1s:1": "queue -1s",
		"8:300us:0:slice=5us": "pieces of 5µs"} {
		if _, err := parseTide([]string{in}); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), in) {
			t.Errorf("parseTide(%s): %v, want an error naming it and saying %q", in, err, msg)
		}
	}
}
