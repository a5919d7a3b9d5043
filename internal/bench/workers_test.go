// Tests of workers.go: CoRunner's rounds, and that a worker does not outlive
// the carve that started it.

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCoRunner(t *testing.T) {
	w := Workers{}
	worker := func(ms string) []string {
		return []string{"sh", "-c", "echo ready; while read l; do echo " + ms + "; done"}
	}
	c, err := w.StartCoRun([]Setup{{}, {}}, [][]string{worker("1.5"), worker("2.25")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for range 3 {
		ms, err := c.Round()
		if err != nil || len(ms) != 2 || ms[0] != 1.5 || ms[1] != 2.25 {
			t.Fatalf("round: %v %v", ms, err)
		}
	}
	if _, err := w.StartCoRun([]Setup{{}}, [][]string{{"sh", "-c", "echo nope"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a worker that is not ready: %v", err)
	}
	bad, err := w.StartCoRun([]Setup{{}}, [][]string{{"sh", "-c", "echo ready; read l; echo fast"}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Stop()
	if _, err := bad.Round(); err == nil || !strings.Contains(err.Error(), "fast") {
		t.Errorf("a worker that prints no time: %v", err)
	}
}

// TestMain doubles as a parent of a worker for TestWorkerDiesWithCarve.
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_WORKER_PARENT") == "1" {
		cmd := Workers{}.command(context.Background(), nil, nil, "sleep", "30")
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println(cmd.Process.Pid)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestWorkerDiesWithCarve: a worker does not outlive the carve that
// started it (killed, say, by a timeout around a bench).
func TestWorkerDiesWithCarve(t *testing.T) {
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), "BENCH_WORKER_PARENT=1")
	in, _ := parent.StdinPipe()
	defer in.Close()
	out, _ := parent.StdoutPipe()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("parent said %q, %v", line, err)
	}
	gone := func() bool { // no such process, or a zombie waiting for init
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(b), ") Z ")
	}
	if gone() {
		t.Fatalf("worker %d is not running", pid)
	}
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !gone() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !gone() {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("worker %d still runs after its parent was killed", pid)
	}
}
