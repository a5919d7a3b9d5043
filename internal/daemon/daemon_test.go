// Tests of daemon.go: slots of dead LS tenants freed, tenants and claims
// served as metrics and JSON, carve's MPS run, started and stopped, bad
// addresses refused, the node's fixed TPCs, and metrics per GPU.

package daemon

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/ctl/ctltest"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/mps/mpstest"
	"github.com/carve-gpu/carve/internal/place"
	"github.com/carve-gpu/carve/internal/status"
)

// sleeper is a process that lives until the test ends (ctltest.Sleeper).
func sleeper(t *testing.T) int {
	t.Helper()
	pid, _ := ctltest.Sleeper(t)
	return pid
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// The test binary doubles as an LS tenant's process's stand-in: with
// HOLD_SLOT set it holds the lock of that entry of the LS file HOLD_NODE,
// as a shim does, until its stdin closes.
func TestMain(m *testing.M) {
	ctltest.ServeHold()
	if slot := os.Getenv("HOLD_SLOT"); slot != "" {
		i, _ := strconv.Atoi(slot)
		f, err := os.OpenFile(os.Getenv("HOLD_NODE"), os.O_RDWR, 0)
		if err == nil {
			err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK, Start: ctl.LSProcLock(i), Len: 1})
		}
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		io.Copy(io.Discard, os.Stdin)
		runtime.KeepAlive(f) // a finalizer closing f at a GC would let the lock go
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// slotHolder is a process holding the lock of entry i of the LS file at
// path until the test ends; it returns its pid.
func slotHolder(t *testing.T, path string, i int) int {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "HOLD_SLOT="+itoa(i), "HOLD_NODE="+path)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); c.Wait() })
	if _, err := io.ReadFull(out, make([]byte, len("held\n"))); err != nil {
		t.Fatalf("the slot holder did not start: %v", err)
	}
	return c.Process.Pid
}

// takeSlot writes a process of an LS tenant into entry i of its LS file,
// as its shim would: pid, busy. A live process holds the entry's lock
// (slotHolder); pid is then the holder's.
func takeSlot(t *testing.T, path string, i, pid int, busy bool) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off := int64(unsafe.Offsetof(ctl.LSFile{}.Procs)) + int64(i)*int64(unsafe.Sizeof(ctl.LSProc{}))
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, uint32(pid))
	if busy {
		binary.LittleEndian.PutUint32(b[4:], 1)
	}
	f.WriteAt(b, off)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// start runs the daemon until the test ends (or stop is called).
func start(t *testing.T, o Options) (addr string, stop func() error) {
	t.Helper()
	ready := make(chan string, 1)
	o.Ready = func(a string) { ready <- a }
	o.Listen, o.Interval = "127.0.0.1:0", 10*time.Millisecond
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- Run(ctx, o) }()
	select {
	case addr = <-ready:
	case err := <-errs:
		cancel()
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not start")
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-errs
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

// TestDaemon: the daemon frees the slot of an LS tenant that died busy,
// serves every tenant (and every Kubernetes claim) as metrics and JSON, runs carve's MPS daemon while it
// runs, and serves the same after a restart (it keeps no state of its own).
func TestDaemon(t *testing.T) {
	dir := t.TempDir()
	n, err := ctl.OpenNode(dir, "node-GPU-test", [4]uint32{0xffff})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	ls, be := sleeper(t), sleeper(t)
	for _, in := range []ctl.Init{
		{PID: ls, Parts: []ctl.Part{{Node: "node-GPU-test", Mask: [4]uint32{^uint32(0xf)}, Live: [4]uint32{0xffff}, SMs: 8}}, Class: ctl.ClassLS,
			Comm: []string{"python3", "serve.py"}, MemLimit: 12 << 30},
		{PID: be, Parts: []ctl.Part{{Node: "node-GPU-test", Mask: [4]uint32{}, Live: [4]uint32{0xffff}}}, Class: ctl.ClassBE,
			Tide: ctl.Tide{InflightMax: 8}, Comm: []string{"python3", "train.py"}, Kernels: ctl.Kernels{Path: "/t/train.json"}},
	} {
		h, err := ctl.Create(dir, in)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	for _, name := range []string{"a", "b"} { // two Kubernetes claims, reserved, no process yet
		cd, err := ctl.ClaimDir(dir, "uid-"+name)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(cd, 0o755)
		h, err := ctl.CreateClaimRoot(cd, ctl.Init{Comm: []string{"claim", "ns/" + name}, Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf0)}, Live: [4]uint32{0xffff}, SMs: 8}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	if err := place.Fence(dir); err != nil { // seats the LS tenant, as its placement did
		t.Fatal(err)
	}
	node := ctltest.LSFile(t, dir, "node-GPU-test", 0) // its LS file: the one seat
	takeSlot(t, node, 0, slotHolder(t, node, 0), false)
	takeSlot(t, node, 3, deadPID(t), true) // died while busy

	d, starts := countedMPS(t)
	t.Cleanup(func() { d.Stop() })
	addr, stop := start(t, Options{Dir: dir, MPS: d, ShowCommands: true})
	if !d.Running() {
		t.Error("MPS is not running under the daemon")
	}
	deadline := time.Now().Add(5 * time.Second)
	var m string
	for time.Now().Before(deadline) {
		if m = get(t, "http://"+addr+"/metrics"); strings.Contains(m, "carve_daemon_reclaimed_slots_total 1") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(m, `carve_tenant_memory_bytes{claim="",class="be",command="python3 train.py",kind="limit"`) {
		t.Errorf("a limit for the BE tenant, which has none:\n%s", m)
	}
	if strings.Contains(m, `carve_dram_bytes_total{claim="",class="ls"`) {
		t.Errorf("DRAM bytes for the LS tenant, which has no kernel table:\n%s", m)
	}
	for _, want := range []string{
		"carve_daemon_reclaimed_slots_total 1",
		`carve_tenant_tpcs{claim="",class="ls",command="python3 serve.py",gpu="",pid="` + itoa(ls) + `"} 4`,
		`carve_ls_busy{claim="",class="ls",command="python3 serve.py",pid="` + itoa(ls) + `"} 0`,
		`carve_be_held_launches_total{claim="",class="be",command="python3 train.py",pid="` + itoa(be) + `"} 0`,
		`carve_node_ls_busy{node="node-GPU-test"} 0`,
		`carve_tenant_tpcs{claim="ns/a",class="",command="",gpu="",pid="0"} 4`,
		`carve_tenant_tpcs{claim="ns/b",class="",command="",gpu="",pid="0"} 4`,
		`carve_tenant_memory_bytes{claim="",class="ls",command="python3 serve.py",kind="limit",pid="` + itoa(ls) + `"} 1.2884901888e+10`,
		`carve_tenant_memory_bytes{claim="",class="ls",command="python3 serve.py",kind="used",pid="` + itoa(ls) + `"} 0`,
		`carve_tenant_memory_refused_total{claim="",class="ls",command="python3 serve.py",pid="` + itoa(ls) + `"} 0`,
		`carve_tenant_memory_bytes{claim="",class="be",command="python3 train.py",kind="used",pid="` + itoa(be) + `"} 0`,
		`carve_dram_bytes_total{claim="",class="be",command="python3 train.py",pid="` + itoa(be) + `"} 0`,
		`carve_dram_unknown_launches_total{claim="",class="be",command="python3 train.py",pid="` + itoa(be) + `"} 0`,
		`carve_be_beside_launches_total{claim="",class="be",command="python3 train.py",pid="` + itoa(be) + `"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
	var rows []status.Row
	if err := json.Unmarshal([]byte(get(t, "http://"+addr+"/status")), &rows); err != nil || len(rows) != 4 || rows[2].Claim != "ns/a" {
		t.Fatalf("/status: %v %+v", err, rows)
	}
	if err := stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
	// MPS runs on for its clients: a restart takes no tenant off it
	pid := d.PID()
	if pid == 0 {
		t.Fatal("MPS ended with the daemon that started it")
	}
	if _, err := os.Stat(filepath.Join(d.PipeDir(), "nvidia-cuda-mps-control.pid")); err != nil {
		t.Errorf("the clients' pipe directory is gone: %v", err)
	}

	// restarted, it adopts MPS, starting no second one, serves the same
	// tenants and frees the slots of the dead
	takeSlot(t, node, 5, deadPID(t), true)
	addr, stop = start(t, Options{Dir: dir, MPS: d, ShowCommands: true})
	if got := d.PID(); got != pid {
		t.Errorf("MPS pid %d after the restart, want %d, the one adopted", got, pid)
	}
	if n := starts(); n != 1 {
		t.Errorf("MPS started %d times over a restart, want once", n)
	}
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m = get(t, "http://"+addr+"/metrics"); strings.Contains(m, "carve_daemon_reclaimed_slots_total 1") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{
		"carve_daemon_reclaimed_slots_total 1",
		`carve_tenant_tpcs{claim="",class="ls",command="python3 serve.py",gpu="",pid="` + itoa(ls) + `"} 4`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("after a restart the metrics lack %q:\n%s", want, m)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
	if d.PID() != pid {
		t.Error("MPS ended with the daemon that adopted it")
	}
	// only carve mps stop ends it
	if err := d.Stop(); err != nil {
		t.Fatalf("carve mps stop: %v", err)
	}
	if d.Running() || !mps.Gone(pid) {
		t.Errorf("MPS (pid %d) runs on after carve mps stop", pid)
	}
}

// countedMPS is carve's MPS daemon run by the stand-in control program,
// with a count of the times it was started.
func countedMPS(t *testing.T) (*mps.Daemon, func() int) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "starts")
	prog := filepath.Join(dir, "nvidia-cuda-mps-control")
	script := "#!/bin/sh\n[ \"$1\" = -d ] && echo start >>" + log + "\nexec " + mpstest.Control(t) + " \"$@\"\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &mps.Daemon{Root: filepath.Join(dir, "mps"), Control: prog}
	return d, func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "start")
	}
}

// TestDaemonStopMPS: a daemon told to stop MPS when it ends does, the MPS
// it started and the MPS it adopted alike.
func TestDaemonStopMPS(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		d, starts := countedMPS(t)
		if adopt {
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
		}
		pid := d.PID()
		_, stop := start(t, Options{Dir: t.TempDir(), MPS: d, StopMPS: true})
		if !d.Running() || (adopt && d.PID() != pid) || starts() != 1 {
			t.Fatalf("adopt %v: MPS runs %v, pid %d (was %d), started %d times", adopt, d.Running(), d.PID(), pid, starts())
		}
		pid = d.PID()
		if err := stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if d.Running() || !mps.Gone(pid) {
			t.Errorf("adopt %v: MPS (pid %d) outlived a daemon told to stop it", adopt, pid)
			d.Stop()
		}
	}
}

// TestDaemonBusyAddress: a port in use is an error, not a hang.
func TestDaemonBusyAddress(t *testing.T) {
	addr, _ := start(t, Options{Dir: t.TempDir()})
	errs := make(chan error, 1)
	go func() { errs <- Run(context.Background(), Options{Dir: t.TempDir(), Listen: addr}) }()
	select {
	case err := <-errs:
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("a second daemon on %s: %v", addr, err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a second daemon on a busy address did not fail")
	}
}

// TestDaemonAddressBeforeMPS: an address the daemon cannot serve on is
// refused before it starts MPS, saying what an address looks like where it
// is no address at all.
func TestDaemonAddressBeforeMPS(t *testing.T) {
	busy, _ := start(t, Options{Dir: t.TempDir()})
	for _, tc := range []struct{ listen, want string }{
		{"bad", `address "bad": want HOST:PORT, e.g. 127.0.0.1:9400`},
		{"127.0.0.1:99999", "invalid port"},
		{busy, "address already in use"},
	} {
		d := &mps.Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
		var log strings.Builder
		err := Run(context.Background(), Options{Dir: t.TempDir(), Listen: tc.listen, MPS: d, Log: slog.New(slog.NewTextHandler(&log, nil))})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--listen %s: %v, want an error with %q", tc.listen, err, tc.want)
		}
		if _, serr := os.Stat(d.PipeDir()); serr == nil || strings.Contains(log.String(), "MPS started") {
			t.Errorf("--listen %s: MPS was started before the address was refused (%v)", tc.listen, err)
		}
	}
}

// TestDaemonIntervalBounded: an interval that would spin a CPU over the
// blocks, or leave ended tenants' slots taken for hours, is refused before
// the daemon listens or starts MPS; 0 is a second.
func TestDaemonIntervalBounded(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "--interval 1ns: want 10ms to 1h0m0s"},
		{-time.Second, "--interval -1s: want 10ms to 1h0m0s"},
		{2 * time.Hour, "--interval 2h0m0s: want 10ms to 1h0m0s"},
	} {
		d := &mps.Daemon{Root: filepath.Join(t.TempDir(), "mps"), Control: mpstest.Control(t)}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := Run(ctx, Options{Dir: t.TempDir(), Listen: "127.0.0.1:0", Interval: tc.d, MPS: d})
		cancel()
		if err == nil || err.Error() != tc.want {
			t.Errorf("interval %v: %v, want %q", tc.d, err, tc.want)
		}
		if _, serr := os.Stat(d.PipeDir()); serr == nil {
			t.Errorf("interval %v: MPS was started", tc.d)
		}
	}
	for _, d := range []time.Duration{MinInterval, time.Second, MaxInterval} {
		if err := CheckInterval("--interval", d); err != nil {
			t.Errorf("CheckInterval(%v) = %v", d, err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestDaemonFence: the daemon keeps the node block's fixed TPCs (those LS
// tenants keep off) to the partitions outside tide that still run.
func TestDaemonFence(t *testing.T) {
	dir := t.TempDir()
	live := [4]uint32{0xffff}
	n, err := ctl.OpenNode(dir, "node-GPU-test", live)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	h, err := ctl.Create(dir, ctl.Init{PID: c.Process.Pid, Comm: []string{"static"}, Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf0)}, Live: live, SMs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	start(t, Options{Dir: dir})
	waitFixed := func(want uint32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for n.Fixed()[0] != want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := n.Fixed()[0]; got != want {
			t.Errorf("fixed %#x, want %#x", got, want)
		}
	}
	waitFixed(0xf0)
	c.Process.Kill()
	c.Wait()
	waitFixed(0)
}

// TestMetricsPerGPU: a tenant with partitions on two GPUs has its TPCs
// counted on each, named by the GPU's UUID.
func TestMetricsPerGPU(t *testing.T) {
	dir := t.TempDir()
	const gpu0, gpu1 = "GPU-72602ec6-310b-1ada-b02f-5c7ec60e17ef", "GPU-5d1e2b7a-0c44-4f0e-9a31-7be0c2f4d6a1"
	pid := sleeper(t)
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Comm: []string{"train"}, Parts: []ctl.Part{{GPU: gpu0, Mask: [4]uint32{^uint32(0xf)}, Live: [4]uint32{0xffff}}, {GPU: gpu1, Mask: [4]uint32{^uint32(0xff0)}, Live: [4]uint32{0xfff}}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	addr, _ := start(t, Options{Dir: dir, ShowCommands: true})
	m := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{
		`carve_tenant_tpcs{claim="",class="",command="train",gpu="` + gpu0 + `",pid="` + itoa(pid) + `"} 4`,
		`carve_tenant_tpcs{claim="",class="",command="train",gpu="` + gpu1 + `",pid="` + itoa(pid) + `"} 8`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}

// TestDaemonLeavesOutCommands: without ShowCommands (carve daemon
// --show-commands) no tenant's command line is served, in /status or in
// the metrics' command label; with it, both name it.
func TestDaemonLeavesOutCommands(t *testing.T) {
	dir := t.TempDir()
	pid := sleeper(t)
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Comm: []string{"serve", "--token=s3cret"}, Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf)}, Live: [4]uint32{0xffff}}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	for _, show := range []bool{false, true} {
		addr, stop := start(t, Options{Dir: dir, ShowCommands: show})
		m, st := get(t, "http://"+addr+"/metrics"), get(t, "http://"+addr+"/status")
		var rows []status.Row
		if err := json.Unmarshal([]byte(st), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("/status: %v %s", err, st)
		}
		label := `carve_tenant_tpcs{claim="",class="",command="",gpu="",pid="` + itoa(pid) + `"} 4`
		if show {
			label = `carve_tenant_tpcs{claim="",class="",command="serve --token=s3cret",gpu="",pid="` + itoa(pid) + `"} 4`
		}
		if !strings.Contains(m, label) {
			t.Errorf("show commands %v: metrics lack %s:\n%s", show, label, m)
		}
		if shown := strings.Contains(m+st, "s3cret"); shown != show || (len(rows[0].Command) > 0) != show {
			t.Errorf("show commands %v: served the command line: %v, /status: %s", show, shown, st)
		}
		stop()
	}
}

// TestMetricsBusyPeriods: an LS tenant's busy periods, as its shim records
// them in its block, are Prometheus histograms, all and alone, with the
// cumulative count at each bound; and so are its marked requests, by its
// mark, with those not timed.
func TestMetricsBusyPeriods(t *testing.T) {
	dir := t.TempDir()
	pid := sleeper(t)
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Class: ctl.ClassLS, Comm: []string{"serve"}, Tide: ctl.Tide{Mark: "req*"},
		Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf)}, Live: [4]uint32{0xffff}}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	f, err := os.OpenFile(filepath.Join(dir, itoa(pid)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	put := func(off uintptr, v uint64) {
		if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, v), int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	var b ctl.Block
	all, alone := unsafe.Offsetof(b.BusyHist), unsafe.Offsetof(b.AloneHist)
	// as the shim records 3 periods of 1.1 us, 2 of 1.6 ms, 1 of 200 s; the
	// 1.1 us ones alone
	put(all, uint64(3*1100+2*1600000)+200e9)
	put(all+8*(1+1), 3)  // bucket 1: 1 to 1.25 us
	put(all+8*(1+43), 2) // bucket 43: 1.536 to 1.792 ms
	put(all+8*(1+ctl.HistBuckets-1), 1)
	put(alone, 3*1100)
	put(alone+8*(1+1), 3)
	marked := unsafe.Offsetof(b.MarkHist) // 2 requests of 1.6 ms, 1 not timed
	put(marked, 2*1600000)
	put(marked+8*(1+43), 2)
	put(unsafe.Offsetof(b.MarkDropped), 1)
	addr, _ := start(t, Options{Dir: dir, ShowCommands: true})
	m := get(t, "http://"+addr+"/metrics")
	l := `claim="",class="ls",command="serve",`
	for _, want := range []string{
		`carve_ls_busy_period_seconds_bucket{` + l + `pid="` + itoa(pid) + `",le="1e-06"} 0`,
		`carve_ls_busy_period_seconds_bucket{` + l + `pid="` + itoa(pid) + `",le="1.25e-06"} 3`,
		`carve_ls_busy_period_seconds_bucket{` + l + `pid="` + itoa(pid) + `",le="0.001536"} 3`,
		`carve_ls_busy_period_seconds_bucket{` + l + `pid="` + itoa(pid) + `",le="0.001792"} 5`,
		`carve_ls_busy_period_seconds_bucket{` + l + `pid="` + itoa(pid) + `",le="+Inf"} 6`,
		`carve_ls_busy_period_seconds_count{` + l + `pid="` + itoa(pid) + `"} 6`,
		`carve_ls_busy_period_seconds_sum{` + l + `pid="` + itoa(pid) + `"} 200.0032033`,
		`carve_ls_busy_period_alone_seconds_bucket{` + l + `pid="` + itoa(pid) + `",le="+Inf"} 3`,
		`carve_ls_busy_period_alone_seconds_count{` + l + `pid="` + itoa(pid) + `"} 3`,
		`carve_ls_marked_request_seconds_bucket{` + l + `mark="req*",pid="` + itoa(pid) + `",le="0.001536"} 0`,
		`carve_ls_marked_request_seconds_bucket{` + l + `mark="req*",pid="` + itoa(pid) + `",le="0.001792"} 2`,
		`carve_ls_marked_request_seconds_count{` + l + `mark="req*",pid="` + itoa(pid) + `"} 2`,
		`carve_ls_marked_request_seconds_sum{` + l + `mark="req*",pid="` + itoa(pid) + `"} 0.0032`,
		`carve_ls_marked_request_dropped_total{` + l + `mark="req*",pid="` + itoa(pid) + `"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}

// TestMetricsBEPaused: carve_be_paused says whether the BE tenant's block
// holds a pause now (ctl.Handle.Pause, on CLOCK_MONOTONIC): 0 before one,
// 1 while one lasts, 0 once it has passed or been ended, read at each
// scrape.
func TestMetricsBEPaused(t *testing.T) {
	dir := t.TempDir()
	pid := sleeper(t)
	h, err := ctl.Create(dir, ctl.Init{PID: pid, Comm: []string{"train"}, Class: ctl.ClassBE,
		Parts: []ctl.Part{{Mask: [4]uint32{}, Live: [4]uint32{0xffff}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	addr, _ := start(t, Options{Dir: dir, ShowCommands: true})
	metric := `carve_be_paused{claim="",class="be",command="train",pid="` + itoa(pid) + `"} `
	for _, c := range []struct {
		until time.Duration
		want  string
	}{{0, "0"}, {ctl.Mono() + time.Hour, "1"}, {ctl.Mono() - time.Millisecond, "0"}, {ctl.Mono() + time.Hour, "1"}, {0, "0"}} {
		if err := h.Pause(c.until); err != nil {
			t.Fatal(err)
		}
		if m := get(t, "http://"+addr+"/metrics"); !strings.Contains(m, metric+c.want+"\n") {
			t.Errorf("paused until %v (now %v): want %s%s in\n%s", c.until, ctl.Mono(), metric, c.want, m)
		}
	}
}

// TestMetricsSLO: an LS tenant's SLO and its attainment over the SLO
// controller's window, which runs in the daemon; a multiple with no alone
// periods is calibrating.
func TestMetricsSLO(t *testing.T) {
	dir := t.TempDir()
	pid := sleeper(t)
	in := ctl.Init{PID: pid, Comm: []string{"serve"}, Parts: []ctl.Part{{Mask: [4]uint32{^uint32(0xf)}, Live: [4]uint32{0xffff}}}}
	ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Max: 8 * time.Millisecond}}.Apply(&in)
	h, err := ctl.Create(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	pid2 := sleeper(t)
	in = ctl.Init{PID: pid2, Comm: []string{"serve"}, Parts: in.Parts}
	ctl.Policy{Class: ctl.ClassLS, SLO: ctl.SLO{Alone: 2}}.Apply(&in)
	if h, err = ctl.Create(dir, in); err != nil {
		t.Fatal(err)
	}
	h.Close()
	addr, _ := start(t, Options{Dir: dir, ShowCommands: true})
	l := `{claim="",class="ls",command="serve",pid="` + itoa(pid) + `"}`
	l2 := `{claim="",class="ls",command="serve",pid="` + itoa(pid2) + `"}`
	want := []string{"carve_ls_slo_seconds" + l + " 0.008", "carve_ls_slo_attainment" + l + " 1", "carve_ls_slo_window_p99_seconds" + l + " 0",
		"carve_ls_slo_estimate_seconds" + l + " 0", "carve_ls_slo_calibrating" + l + " 0", "carve_ls_slo_calibrating" + l2 + " 1",
		"carve_ls_slo_be_level" + l + " 1"}
	var m string
	// the controller steps as the daemon starts, on its own goroutine:
	// wait for its first step, not for a time
	for range 1000 {
		if m = get(t, "http://"+addr+"/metrics"); strings.Contains(m, want[0]) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, w := range want {
		if !strings.Contains(m, w) {
			t.Errorf("metrics lack %s:\n%s", w, m)
		}
	}
	if strings.Contains(m, "carve_ls_marked_request") {
		t.Errorf("LS tenants without a mark have marked requests:\n%s", m)
	}
}
