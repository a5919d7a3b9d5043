// Tests of mps.go: the control daemon started and stopped, a client's
// environment, a missing control program, a stale pid file, and directories
// it cannot trust.

package mps

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/mps/mpstest"
)

func TestLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctl := mpstest.Control(t)
	d := Daemon{Root: filepath.Join(dir, "mps"), Control: ctl}
	if d.Running() {
		t.Fatal("running before start")
	}
	if _, err := d.Query("get_server_list"); err == nil {
		t.Error("query before start succeeded")
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if !d.Running() {
		t.Fatal("not running after start")
	}
	if err := d.Start(); err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("second start: %v", err)
	}
	if out, err := d.Query("get_server_list"); err != nil || out != "4242" {
		t.Errorf("query: %q %v", out, err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if d.Running() {
		t.Error("running after stop")
	}
	if err := d.Stop(); err == nil {
		t.Error("second stop succeeded")
	}
}

func TestClientEnv(t *testing.T) {
	d := Daemon{Root: "/x"}
	env := strings.Join(d.ClientEnv(DefaultConnections), " ")
	for _, want := range []string{"CUDA_MPS_PIPE_DIRECTORY=/x/pipe", "CUDA_DEVICE_MAX_CONNECTIONS=8"} {
		if !strings.Contains(env, want) {
			t.Errorf("client env %q lacks %q", env, want)
		}
	}
}

// TestClientEnvFindsDaemon: a carve started in a client's environment takes
// the daemon the client connects to for carve's own, wherever CARVE_MPS_DIR
// pointed before (bench's daemons live in directories of their own).
func TestClientEnvFindsDaemon(t *testing.T) {
	t.Setenv(VarDir, "/elsewhere")
	d := Daemon{Root: t.TempDir()}
	for _, kv := range d.ClientEnv(1) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	if got := Default(); got.Root != d.Root || got.PipeDir() != os.Getenv(VarPipeDir) {
		t.Errorf("carve in a client's environment finds %+v, want %s", got, d.Root)
	}
}

func TestMissingControl(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := searchDirs
	searchDirs = nil
	defer func() { searchDirs = old }()
	if err := (Daemon{Root: t.TempDir()}).Start(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("start without the binary: %v", err)
	}
}

// TestStalePidFile: a pid file left behind that names a live process of
// another program (its pid reused, as after a pod was replaced) is no
// running MPS, so a new daemon starts one instead of adopting nothing.
func TestStalePidFile(t *testing.T) {
	d := Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
	if err := os.MkdirAll(d.PipeDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(d.PipeDir(), "nvidia-cuda-mps-control.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d.Running() {
		t.Fatalf("the pid file names this test (pid %d), not MPS, and Running says it runs", os.Getpid())
	}
	if err := d.Start(); err != nil {
		t.Fatalf("start beside a stale pid file: %v", err)
	}
	defer d.Stop()
	if !d.Running() {
		t.Error("not running after start")
	}
}

// TestUntrustedDirectory: a daemon whose directory others may write is no
// daemon of carve's: it does not run for carve, and none is started there.
func TestUntrustedDirectory(t *testing.T) {
	d := Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	for _, dir := range []string{d.Root, d.PipeDir()} {
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if d.Running() {
			t.Errorf("%s is mode 0777, and its daemon runs for carve", dir)
		}
		if err := d.Start(); err == nil || !strings.Contains(err.Error(), "no one else may write") {
			t.Errorf("start in %s of mode 0777: %v", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if !d.Running() {
		t.Error("not running once its directories are its own again")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(d.Root, link); err != nil {
		t.Fatal(err)
	}
	if (Daemon{Root: link, Control: d.Control}).Running() {
		t.Error("a daemon reached through a symbolic link runs for carve")
	}
}
