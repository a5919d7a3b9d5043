// Tests of carve set, with carve ls listing what it changed.

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/status"
)

func TestLsAndSet(t *testing.T) {
	top := sandbox(t)
	dir, err := ctl.Dir()
	if err != nil {
		t.Fatal(err)
	}
	// this test process plays the partitioned program on TPCs 0-3
	mask, _ := partition.Mask(top, partition.Set{0, 1, 2, 3})
	h, err := ctl.Create(dir, ctl.Init{PID: os.Getpid(), Comm: []string{"python3", "serve.py"}, Parts: []ctl.Part{{Mask: mask, Live: top.Live()}}})
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
	nh, err := ctl.Create(dir, ctl.Init{PID: nb.Process.Pid, Comm: []string{"sleep", "30"}, Parts: []ctl.Part{{Mask: nmask, Live: top.Live()}}})
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
