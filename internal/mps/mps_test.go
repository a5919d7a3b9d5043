package mps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeControl is a stand-in for nvidia-cuda-mps-control: -d starts a
// background "daemon" and writes its pid where the real one does; on stdin it
// answers get_server_list and quits on quit.
const fakeControl = `#!/bin/sh
set -e
[ -n "$CUDA_MPS_PIPE_DIRECTORY" ] || { echo "no pipe directory" >&2; exit 1; }
if [ "$1" = "-d" ]; then
	sleep 300 </dev/null >/dev/null 2>&1 &
	echo $! >"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
	exit 0
fi
read cmd
case "$cmd" in
get_server_list) echo 4242 ;;
quit) kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")" ;;
*) echo "unknown $cmd"; exit 1 ;;
esac
`

func TestLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctl := filepath.Join(dir, "nvidia-cuda-mps-control")
	if err := os.WriteFile(ctl, []byte(fakeControl), 0o755); err != nil {
		t.Fatal(err)
	}
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

func TestMissingControl(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := searchDirs
	searchDirs = nil
	defer func() { searchDirs = old }()
	if err := (Daemon{Root: t.TempDir()}).Start(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("start without the binary: %v", err)
	}
}
