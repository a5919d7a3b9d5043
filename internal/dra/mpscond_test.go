// Tests of mpscond.go: a claim that asks for MPS where carve's MPS is not
// running, or is gone, is prepared time-sliced and its condition says so.

package dra

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carve-gpu/carve/internal/mps/mpstest"
)

// TestMPSCondition: a claim that asks for MPS where carve's MPS daemon is
// not running is prepared, time-sliced (its containers' pipe directory has
// no server), and its MPS condition says so and what to do, where its
// status data alone said "mps": false; one prepared where MPS runs joins
// it; one whose config asks for none says that; a claim that failed gets
// no MPS condition.
func TestMPSCondition(t *testing.T) {
	td := newTestDriver(t)
	down := td.claim(t, "down", 8)
	bad := td.claim(t, "bad", 0)
	td.prepare(t, down, bad)
	td.mpsRunning(t)
	up := td.claim(t, "up", 8)
	own := td.claim(t, "own", 8, `{"apiVersion":"gpu.carve.dev/v1alpha1","kind":"ClaimConfig","mps":false}`)
	for name, r := range td.prepare(t, up, own) {
		if r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
	}
	for _, tc := range []struct {
		name   string
		status metav1.ConditionStatus
		reason string
		says   []string
		pipe   string // CUDA_MPS_PIPE_DIRECTORY of its containers
	}{
		{"down", metav1.ConditionFalse, ReasonMPSNotRunning, []string{"not running", td.Paths.MPS.PipeDir(), "time-sliced", "start carve daemon"},
			ContainerDir + "/no-mps"},
		{"up", metav1.ConditionTrue, ReasonMPSJoined, []string{td.Paths.MPS.PipeDir()}, ContainerPipe},
		{"own", metav1.ConditionFalse, ReasonMPSNotRequested, []string{"mps: false"}, ContainerDir + "/no-mps"},
	} {
		c := map[string]*resourceapi.ResourceClaim{"down": down, "up": up, "own": own}[tc.name]
		cond := td.condition(t, c, ConditionMPS)
		if cond == nil || cond.Status != tc.status || cond.Reason != tc.reason {
			t.Errorf("%s: MPS condition %+v, want %s %s", tc.name, cond, tc.status, tc.reason)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(cond.Message, s) {
				t.Errorf("%s: MPS condition's message %q does not say %q", tc.name, cond.Message, s)
			}
		}
		if ready := td.condition(t, c, ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
			t.Errorf("%s: Ready %+v", tc.name, ready)
		}
		if _, st := td.readyCondition(t, c); st == nil || st.MPS != (tc.status == metav1.ConditionTrue) {
			t.Errorf("%s: status data %+v", tc.name, st)
		}
		if env := td.containerEnv(t, tc.name); !strings.Contains(env, "CUDA_MPS_PIPE_DIRECTORY="+tc.pipe+" ") {
			t.Errorf("%s: containers' environment %q, want its pipe directory %s", tc.name, env, tc.pipe)
		}
	}
	if cond := td.condition(t, bad, ConditionMPS); cond != nil {
		t.Errorf("a claim that failed has an MPS condition: %+v", cond)
	}
}

// TestMPSGone: where carve's MPS daemon is gone but left its pid file (a
// pipe directory without a server: killed, or its node rebooted), or the
// pid file names a live process of another program (its pid reused), a
// claim does not send its containers to it: it is prepared time-sliced,
// with the MPS condition saying MPS is not running.
func TestMPSGone(t *testing.T) {
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	for name, pid := range map[string]int{"ended": ended.Process.Pid, "reused": other.Process.Pid} {
		t.Run(name, func(t *testing.T) {
			td := newTestDriver(t)
			td.Paths.MPS.Control = mpstest.Control(t) // the program a live MPS would run
			if err := os.MkdirAll(td.Paths.MPS.PipeDir(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(td.Paths.MPS.PipeDir(), "nvidia-cuda-mps-control.pid"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				t.Fatal(err)
			}
			c := td.claim(t, "c", 8)
			if r := td.prepare(t, c)["c"]; r.Err != nil {
				t.Fatal(r.Err)
			}
			if cond := td.condition(t, c, ConditionMPS); cond == nil || cond.Reason != ReasonMPSNotRunning {
				t.Errorf("MPS condition %+v, want %s", cond, ReasonMPSNotRunning)
			}
			if env := td.containerEnv(t, "c"); strings.Contains(env, ContainerPipe) {
				t.Errorf("the claim's containers are sent to a pipe directory with no server: %q", env)
			}
		})
	}
}
