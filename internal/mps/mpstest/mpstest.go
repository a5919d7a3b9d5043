// Package mpstest gives tests a stand-in for nvidia-cuda-mps-control.
package mpstest

import (
	"os"
	"path/filepath"
	"testing"
)

// script is a stand-in for nvidia-cuda-mps-control: -d starts a
// background "daemon" (itself, so that it has the control program's name)
// and writes its pid where the real one does; on stdin it
// answers get_server_list and quits on quit. While the pipe directory
// holds a file named RefuseFile it answers nothing, as a daemon that
// refuses its clients (wedged, or full) does: the control program fails.
const script = `#!/bin/sh
set -e
[ -n "$CUDA_MPS_PIPE_DIRECTORY" ] || { echo "no pipe directory" >&2; exit 1; }
if [ "$1" = "-d" ]; then
	"$0" serve </dev/null >/dev/null 2>&1 &
	echo $! >"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
	exit 0
fi
if [ "$1" = serve ]; then # the daemon: a process of the control program's name, as the real one is
	i=0
	while [ $i -lt 300 ]; do sleep 1; i=$((i + 1)); done
	exit 0
fi
if [ -e "$CUDA_MPS_PIPE_DIRECTORY/` + RefuseFile + `" ]; then
	echo "the control daemon refused the connection" >&2
	exit 1
fi
read cmd
case "$cmd" in
get_server_list) echo 4242 ;;
quit) kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")" ;;
*) echo "unknown $cmd"; exit 1 ;;
esac
`

// RefuseFile, in the pipe directory, makes the stand-in refuse its clients.
const RefuseFile = "refuse"

// Control writes the stand-in into a temporary directory and returns its
// path, for mps.Daemon.Control.
func Control(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nvidia-cuda-mps-control")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
