// The in-process harness of carve's command tests (carve, sandbox, itoa),
// and the errors each command says for wrong flags and arguments.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/shimtest"
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

// TestMain serves as a process holding a block's lock where a test
// started it so (ctltest.HoldLock), else runs the tests.
func TestMain(m *testing.M) {
	ctltest.ServeHold()
	os.Exit(m.Run())
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
		{[]string{"bench", "serve", "--ls", "llm:compiled"}, "MODEL one of resnet50, mobilenet_v3_large, efficientnet_b0, bert, llm"},
		{[]string{"bench", "serve", "--be", "gpt-train"}, "want one of densenet161, vit_b_16, resnet50-train, transformer-train"},
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
		{[]string{"bench", "serve", "--orders", "ls-first,both"}, `order "both": want one of ls-first, be-first, be-ready-first`},
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

func itoa(i int) string { return strconv.Itoa(i) }
