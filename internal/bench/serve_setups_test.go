// Tests of the serve benchmark's runs and setups (serve_setups.go): the run
// protocol with stand-in programs, in each start order, a setup that
// steers beside another SLO controller, and setups in orders.

package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/report"
	"github.com/carve-gpu/carve/internal/slo"
	"github.com/carve-gpu/carve/internal/stats"
)

// TestRunServe drives the run protocol with stand-ins for the LS service
// and the BE job: both get ready, both are told to go, both report (the
// LS its start and the BE its steps' ends on the clock they share).
func TestRunServe(t *testing.T) {
	dir := t.TempDir()
	ls := filepath.Join(dir, "ls")
	os.WriteFile(ls, []byte("#!/bin/sh\necho ready; read go; echo '{\"latencies_ms\": [1.5, 2.5, 9], \"arrivals_s\": [0.1, 0.2, 0.3], \"start_s\": 50.5, \"requests\": 3}'\n"), 0o755)
	be := filepath.Join(dir, "be")
	os.WriteFile(be, []byte("#!/bin/sh\necho ready; read go; echo '{\"items\": 640, \"unit\": \"images\", \"seconds\": 2, \"ends_s\": [50.6, 51.7], \"info\": {\"params\": 25e6}}'\n"), 0o755)
	w := Workers{}
	m, err := w.runServe(setup{withLS: true, withBE: true}, []string{ls}, []string{be}, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.latencies) != 3 || m.requests != 3 || m.items != 640 || m.unit != "images" || m.seconds != 2 || m.beInfo["params"] != 25e6 ||
		m.lsStart != 50.5 || !slices.Equal(m.beEnds, []float64{50.6, 51.7}) {
		t.Errorf("served %+v", m)
	}
	// a program that never reports is stopped, not waited on for good
	hung := filepath.Join(dir, "hung")
	os.WriteFile(hung, []byte("#!/bin/sh\necho ready; read go; echo $$ >"+filepath.Join(dir, "hung.pid")+"; exec sleep 60\n"), 0o755)
	defer func(g time.Duration) { serveGrace = g }(serveGrace)
	serveGrace = 300 * time.Millisecond
	start := time.Now()
	if _, err := w.runServe(setup{withBE: true}, nil, []string{hung}, 0, time.Second); err == nil || !strings.Contains(err.Error(), "no result within") {
		t.Errorf("a program that never reports: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopping it took %v", d)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hung.pid")); err != nil {
		t.Error(err)
	} else if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("the program that never reported (pid %d) still runs", pid)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("#!/bin/sh\necho loading; exit 1\n"), 0o755)
	if _, err := w.runServe(setup{withBE: true}, nil, []string{bad}, 0, 1); err == nil || !strings.Contains(err.Error(), "did not get ready") {
		t.Errorf("a program that never gets ready: %v", err)
	}
}

// TestRunServeOrders: LS first, the LS is ready before the BE starts and
// both are told to go then; BE first, the BE starts and goes, the LS
// starts while it runs, and the BE is measured from the LS's go to its
// result, its start-up left out. In both, the BE is to run RecoveryTail on
// and is told when the LS has reported, the LS idling beside it until
// the run is over (its stdin closed), when it exits by itself; alone, the
// BE is told neither.
func TestRunServeOrders(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	tail := fmt.Sprintf("--tail=%g", RecoveryTail.Seconds())
	// the LS waits (up to 5 s) for the BE to have gone, if it is to, so the
	// log's order does not hang on how fast the BE reads its go
	ls := filepath.Join(dir, "ls")
	os.WriteFile(ls, []byte(`#!/bin/sh
for i in $(seq 50); do grep -q "be go" `+log+` 2>/dev/null && break; [ -n "$BE_FIRST" ] || break; sleep 0.1; done
echo "ls start" >>`+log+`
sleep 1 # its warm-up and graph capture, outside the BE's window
echo "ls ready" >>`+log+`
echo ready; read go; echo "ls go" >>`+log+`
sleep 0.5 # serving
echo "ls done" >>`+log+`
echo '{"latencies_ms": [1, 2], "requests": 2}'
read end # idle, as serve_ls.py, until the run is over
echo "ls exit" >>`+log+`
`), 0o755)
	be := filepath.Join(dir, "be")
	os.WriteFile(be, []byte(`#!/bin/sh
echo "be start $*" >>`+log+`
echo ready; read go; echo "be go" >>`+log+`
if [ "$1" = `+tail+` ]; then read done; echo "be told LS done" >>`+log+`; fi
if [ "$1" != --marks ]; then echo '{"items": 640, "seconds": 8}'; exit; fi
read start; t0=$(date +%s%N); echo "be window start" >>`+log+`
read stop; t1=$(date +%s%N); echo "be window end" >>`+log+`
echo "{\"items\": 64, \"seconds\": $(( (t1 - t0) / 1000000 ))e-3}"
`), 0o755)
	events := func() []string {
		b, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	before := func(ev []string, a, b string) bool {
		i, j := slices.Index(ev, a), slices.Index(ev, b)
		return i >= 0 && j >= 0 && i < j
	}
	w := Workers{}
	m, err := w.runServe(setup{withLS: true, withBE: true}, []string{ls}, []string{be}, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev := events()
	if start := "be start " + tail; !before(ev, "ls ready", start) || !before(ev, start, "ls go") || !before(ev, start, "be go") ||
		!before(ev, "ls done", "be told LS done") || !before(ev, "be told LS done", "ls exit") || m.items != 640 || m.seconds != 8 {
		t.Errorf("LS first: %q, served %+v", ev, m)
	}
	t.Setenv("BE_FIRST", "1")
	m, err = w.runServe(setup{withLS: true, withBE: true, beFirst: true}, []string{ls}, []string{be}, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev = events()
	for _, o := range [][2]string{{"be start --marks " + tail, "be go"}, {"be go", "ls start"}, {"ls ready", "ls go"}, {"ls ready", "be window start"},
		{"ls done", "be window end"}, {"be window end", "ls exit"}} {
		if !before(ev, o[0], o[1]) {
			t.Errorf("BE first: %q before %q? %q", o[0], o[1], ev)
		}
	}
	if len(m.latencies) != 2 || m.items != 64 || m.seconds < 0.45 || m.seconds > 1.2 {
		t.Errorf("BE first: served %+v, want the BE over the LS's 0.5 s of serving, not its 1 s start", m)
	}
	t.Setenv("BE_FIRST", "")
	m, err = w.runServe(setup{withLS: true, withBE: true, beReady: true}, []string{ls}, []string{be}, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ev = events()
	for _, o := range [][2]string{{"be start " + tail, "ls start"}, {"ls ready", "be go"}, {"ls ready", "ls go"}, {"ls done", "be told LS done"}} {
		if !before(ev, o[0], o[1]) {
			t.Errorf("BE ready first: %q before %q? %q", o[0], o[1], ev)
		}
	}
	if m.items != 640 || m.seconds != 8 {
		t.Errorf("BE ready first: served %+v, want the BE over its whole run, as LS first", m)
	}
	// an order asks for both programs: one alone runs as it always did
	m, err = w.runServe(setup{withBE: true, beFirst: true}, nil, []string{be}, 0, time.Second)
	if ev := events(); err != nil || m.items != 640 || !slices.Contains(ev, "be start ") || slices.Contains(ev, "be told LS done") {
		t.Errorf("BE alone, BE first: %q, %+v %v", ev, m, err)
	}
}

// TestServeProcEnd: at a run's end a program that exits once its stdin
// closes (the LS, idle after its report) is let finish, not killed; one
// that does not is killed after the grace, and reaped.
func TestServeProcEnd(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	idle := filepath.Join(dir, "idle")
	os.WriteFile(idle, []byte("#!/bin/sh\necho ready; cat >/dev/null; sleep 0.2; echo bye >"+done+"\n"), 0o755)
	deaf := filepath.Join(dir, "deaf")
	os.WriteFile(deaf, []byte("#!/bin/sh\necho ready; exec sleep 60\n"), 0o755)
	w := Workers{}
	p, err := w.startServe(t.Context(), nil, nil, idle)
	if err != nil {
		t.Fatal(err)
	}
	p.end(exitGrace)
	if b, err := os.ReadFile(done); err != nil || string(b) != "bye\n" {
		t.Errorf("a program that ends when its stdin closes was not let finish: %q %v", b, err)
	}
	p, err = w.startServe(t.Context(), nil, nil, deaf)
	if err != nil {
		t.Fatal(err)
	}
	p.end(100 * time.Millisecond)
	if p.cmd.ProcessState == nil || p.cmd.ProcessState.Success() {
		t.Errorf("a program that ignores its stdin closing: %v, want it killed and reaped", p.cmd.ProcessState)
	}
}

func TestInOrders(t *testing.T) {
	s := []setup{{name: "MPS", withLS: true, withBE: true}, {name: "carve tide, x", withLS: true, withBE: true}}
	var got []string
	for _, x := range inOrders(s, []string{"be-first", "ls-first", "be-ready-first"}) {
		got = append(got, fmt.Sprintf("%s/%v/%v", x.name, x.beFirst, x.beReady))
	}
	want := []string{"MPS (BE first)/true/false", "MPS/false/false", "MPS (BE ready first)/false/true",
		"carve tide, x (BE first)/true/false", "carve tide, x/false/false", "carve tide, x (BE ready first)/false/true"}
	if !slices.Equal(got, want) {
		t.Errorf("setups in orders: %q, want %q", got, want)
	}
	if got := inOrders(s, nil); len(got) != 2 || got[0].beFirst || got[1].name != "carve tide, x" {
		t.Errorf("no order: %+v, want LS first, as before", got)
	}
}

// TestRunServeNotSteered: a setup that steers, beside another SLO
// controller on the runtime directory, says so in its result (the
// controller's first error), and its table row is marked not steered.
func TestRunServeNotSteered(t *testing.T) {
	dir := t.TempDir()
	rt := filepath.Join(dir, "run")
	os.Mkdir(rt, 0o700)
	t.Setenv("CARVE_RUNTIME_DIR", rt)
	other := slo.New(rt)
	if err := other.TryStep(); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ls := filepath.Join(dir, "ls")
	os.WriteFile(ls, []byte("#!/bin/sh\necho ready; read go; echo '{\"latencies_ms\": [1.5, 2.5, 9], \"requests\": 3}'\n"), 0o755)
	be := filepath.Join(dir, "be")
	os.WriteFile(be, []byte("#!/bin/sh\necho ready; read go; echo '{\"items\": 640, \"unit\": \"images\", \"seconds\": 2}'\n"), 0o755)
	m, err := Workers{}.runServe(setup{withLS: true, withBE: true, slo: ctl.SLO{Alone: 2}}, []string{ls}, []string{be}, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(m.steerErr, slo.ErrOther) || !strings.Contains(describeServed(m), "NOT STEERED") {
		t.Errorf("beside another controller: %v (%s), want ErrOther said", m.steerErr, describeServed(m))
	}
	other.Close()
	if m, err = (Workers{}).runServe(setup{withLS: true, withBE: true, slo: ctl.SLO{Alone: 2}}, []string{ls}, []string{be}, 100, 1); err != nil || m.steerErr != nil {
		t.Errorf("alone: %v, %v", m.steerErr, err)
	}
	var b strings.Builder
	serveTable(&b, &report.Result{Series: []report.Series{{Mechanism: "carve tide, slo", Victim: "a", Competitor: "b", Note: "not steered: x",
		Points: []report.Point{{Label: "LS latency @10/s", Stats: stats.Stats{N: 3, P50: 1, P99: 2}}}}}})
	if !strings.Contains(b.String(), "carve tide, slo (!)") || !strings.Contains(b.String(), "(!) a beside b, carve tide, slo at 10/s: not steered: x") {
		t.Errorf("table of a point not steered:\n%s", b.String())
	}
}
