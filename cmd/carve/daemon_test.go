// Tests of carve daemon: MPS kept across its restarts, and the flags the
// chart starts it with.

package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/chart/charttest"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/mps/mpstest"
)

// daemonUntilTERM runs carve daemon with args until it serves, sends this
// process SIGTERM, as a DaemonSet's rolling upgrade does, and returns what
// the daemon said.
func daemonUntilTERM(t *testing.T, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	type result struct {
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, err := carve(t, append([]string{"daemon", "--listen", addr, "--interval", "10ms"}, args...)...)
		done <- result{stderr, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case r := <-done:
			t.Fatalf("carve daemon ended before serving: %v\n%s", r.err, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("carve daemon did not serve")
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("carve daemon after SIGTERM: %v\n%s", r.err, r.stderr)
		}
		return r.stderr
	case <-time.After(20 * time.Second):
		t.Fatal("carve daemon did not end on SIGTERM")
	}
	return ""
}

// TestDaemonKeepsMPS: SIGTERM ends carve daemon but not MPS, whose clients'
// pipe directory stays; the next daemon adopts it; carve mps stop ends it;
// a daemon run with --stop-mps-on-exit ends it when it ends.
func TestDaemonKeepsMPS(t *testing.T) {
	sandbox(t)
	t.Setenv("PATH", filepath.Dir(mpstest.Control(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	d := mps.Default()
	t.Cleanup(func() { d.Stop() })

	log := daemonUntilTERM(t)
	pid := d.PID()
	if pid == 0 || !strings.Contains(log, "MPS started") {
		t.Fatalf("MPS ended with carve daemon (pid %d):\n%s", pid, log)
	}
	if _, err := os.Stat(filepath.Join(d.PipeDir(), "nvidia-cuda-mps-control.pid")); err != nil {
		t.Errorf("the clients' pipe directory is gone: %v", err)
	}

	log = daemonUntilTERM(t)
	if !strings.Contains(log, "MPS adopted") || strings.Contains(log, "MPS started") || d.PID() != pid {
		t.Errorf("the second daemon did not adopt MPS (pid %d, now %d):\n%s", pid, d.PID(), log)
	}
	if out, _, err := carve(t, "mps", "stop"); err != nil || !strings.Contains(out, "MPS stopped") {
		t.Fatalf("carve mps stop: %v %q", err, out)
	}
	if d.Running() || !mps.Gone(pid) {
		t.Fatalf("MPS (pid %d) runs on after carve mps stop", pid)
	}

	for _, adopt := range []bool{false, true} {
		if adopt {
			if _, _, err := carve(t, "mps", "start"); err != nil {
				t.Fatal(err)
			}
		}
		log = daemonUntilTERM(t, "--stop-mps-on-exit")
		if d.Running() || !strings.Contains(log, "MPS stopped") {
			t.Errorf("adopt %v: MPS outlived carve daemon --stop-mps-on-exit:\n%s", adopt, log)
		}
	}
	if _, _, err := carve(t, "daemon", "--no-mps", "--stop-mps-on-exit"); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("--no-mps --stop-mps-on-exit: %v", err)
	}
}

// TestChartDaemonFlags: the chart's carve daemon container (with MPS on,
// off, and stopped on exit; its metrics exposed, with command lines) starts
// carve daemon with flags it has, listening on the pod's 127.0.0.1 unless
// the metrics are exposed.
func TestChartDaemonFlags(t *testing.T) {
	runs := 0
	for _, values := range []map[string]any{{"mps": map[string]any{"enabled": true}}, {"mps": map[string]any{"enabled": false}},
		{"mps": map[string]any{"stopOnExit": true}}, {"metrics": map[string]any{"expose": true, "showCommands": true}},
		{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}} {
		exposed := values["metrics"] != nil
		for _, c := range charttest.Containers(t, values) {
			if len(c.Command) < 2 || c.Command[0] != "carve" {
				continue
			}
			runs++
			cmd, args, err := newRoot().Find(append(c.Command[1:], c.Args...))
			if err == nil {
				err = cmd.ParseFlags(args)
			}
			if err != nil || cmd.Name() != "daemon" || cmd.Flags().NArg() != 0 {
				t.Errorf("%s with %v, container %s runs %q: %v", c.Template, values, c.Name, c.Command, err)
				continue
			}
			listen, _ := cmd.Flags().GetString("listen")
			show, _ := cmd.Flags().GetBool("show-commands")
			want := "127.0.0.1:9400"
			if exposed {
				want = "0.0.0.0:9400"
			}
			if listen != want || show != (values["metrics"] != nil && values["metrics"].(map[string]any)["showCommands"] == true) {
				t.Errorf("with %v, carve daemon listens on %s (want %s), shows commands %v", values, listen, want, show)
			}
		}
	}
	if runs != 5 {
		t.Errorf("%d containers run carve, want carve daemon once for each of 5 settings", runs)
	}
}
