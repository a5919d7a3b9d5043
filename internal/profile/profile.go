// Package profile measures how a kernel behaves alone on partitions of
// several sizes: its time at each TPC count (through carve's masks) and, from
// Nsight Compute where it is installed, the work it does on the whole GPU
// (DRAM bytes, L2 requests, executed instructions). It writes the latency
// model's profiles (model.Profile), JSON files a user can keep and share;
// reading them needs no GPU and no import of this package.
package profile

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/model"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/stats"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/workload"
)

// Times times app at each TPC count (GPC-packed), reps runs after one
// warm-up each.
func Times(app *workload.App, t *topo.Topology, tpcs []int, reps int, progress func()) ([]model.Size, error) {
	return timeSizes(t, tpcs, reps, progress, func(_ partition.Set, mask topo.Disable) (float64, error) {
		v, err := app.Time(&mask)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", app.Name(), err)
		}
		return v, nil
	})
}

// timeSizes runs run on a GPC-packed partition of each TPC count, reps
// times after one warm-up each, and summarizes the times it returns.
func timeSizes(t *topo.Topology, tpcs []int, reps int, progress func(), run func(partition.Set, topo.Disable) (float64, error)) ([]model.Size, error) {
	var out []model.Size
	for _, k := range tpcs {
		if k < 1 || k > len(t.TPCs) {
			return nil, fmt.Errorf("%d TPCs: this GPU has 1 to %d", k, len(t.TPCs))
		}
		set := partition.Pack(t, k, nil)
		mask, err := partition.Mask(t, set)
		if err != nil {
			return nil, err
		}
		ms := make([]float64, 0, reps)
		for i := 0; i <= reps; i++ {
			v, err := run(set, mask)
			if err != nil {
				return nil, fmt.Errorf("on %d TPCs: %w", k, err)
			}
			if i > 0 {
				ms = append(ms, v)
			}
		}
		sms := 0
		for _, i := range set {
			sms += len(t.TPCs[i].SMs)
		}
		out = append(out, model.Size{TPCs: k, SMs: sms, Stats: stats.Summarize(ms)})
		progress()
	}
	return out, nil
}

// NominalBW reads device ordinal's nominal DRAM bandwidth in GB/s.
func NominalBW(ordinal int) (float64, error) {
	if err := cuda.Load(); err != nil {
		return 0, err
	}
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return 0, err
	}
	khz, err := dev.Attr(cuda.AttrMemClockKHz)
	if err != nil {
		return 0, err
	}
	bits, err := dev.Attr(cuda.AttrBusWidth)
	if err != nil {
		return 0, err
	}
	return 2 * float64(khz) * 1e3 * float64(bits) / 8 / 1e9, nil
}

// ProgramTimes times a whole program (argv) at each TPC count, started
// through carve run (prefix, ending in --) on a GPC-packed partition, reps
// times after one warm-up run each: from start to exit, in ms. A program
// that fails stops the profile with its error output.
func ProgramTimes(prefix func(partition.Set) []string, argv []string, t *topo.Topology, tpcs []int, reps int, progress func()) ([]model.Size, error) {
	return timeSizes(t, tpcs, reps, progress, func(set partition.Set, _ topo.Disable) (float64, error) {
		full := append(prefix(set), argv...)
		cmd := exec.Command(full[0], full[1:]...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, lastLines(stderr.String(), 5))
		}
		return float64(time.Since(start).Microseconds()) / 1e3, nil
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Metrics are the ncu metrics Counters holds, in its order.
var Metrics = []string{"dram__bytes.sum", "lts__t_requests.sum", "smsp__thread_inst_executed.sum", "gpu__time_duration.sum"}

// FindNCU returns the path of Nsight Compute's CLI, or an error that says
// how to get it.
func FindNCU() (string, error) {
	if p, err := exec.LookPath("ncu"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("ncu (Nsight Compute) was not found on PATH or in /usr/local/cuda/bin: " +
		"profiles will have times but no DRAM bytes, L2 requests or instructions (install Nsight Compute, or pass --ncu PATH)")
}

// Count runs argv under ncu, which profiles the second launch of kernel
// (the first is a warm-up), and returns its counters; with kernel "" it
// profiles every launch of the program and sums them.
func Count(ncu, kernel string, argv ...string) (*model.Counters, error) {
	args := []string{"--csv", "--print-units", "base", "--metrics", strings.Join(Metrics, ",")}
	if kernel != "" {
		args = append(args, "--kernel-name", kernel, "--launch-skip", "1", "--launch-count", "1")
	}
	args = append(args, argv...)
	cmd := exec.Command(ncu, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	c, err := ParseNCU(out)
	if err != nil {
		return nil, err
	}
	c.Tool = ncu
	return c, nil
}

// ParseNCU reads the counters from ncu's --csv output, summed over the
// kernels profiled (any lines before the CSV header, such as ==PROF==
// notes, are skipped).
func ParseNCU(out []byte) (*model.Counters, error) {
	rows, err := ncuRows(out)
	if err != nil {
		return nil, err
	}
	got := map[string]float64{} // summed over every kernel profiled
	for _, r := range rows {
		got[r.metric] += r.value
	}
	for _, m := range Metrics {
		if _, ok := got[m]; !ok {
			return nil, fmt.Errorf("ncu reported no %s (got %v)", m, got)
		}
	}
	return &model.Counters{DRAMBytes: got[Metrics[0]], L2Requests: got[Metrics[1]], Instructions: got[Metrics[2]], DurationNS: got[Metrics[3]]}, nil
}

// ncuRow is one line of ncu's --csv output: a metric of one kernel
// profiled (by its ID in the run).
type ncuRow struct {
	id, kernel, metric string
	value              float64
}

// ncuRows reads the rows of ncu's --csv output (any lines before the CSV
// header, such as ==PROF== notes, are skipped); values may have commas
// between thousands.
func ncuRows(out []byte) ([]ncuRow, error) {
	i := bytes.Index(out, []byte(`"ID",`))
	if i < 0 {
		return nil, fmt.Errorf("no CSV in ncu's output: %q", firstLine(out))
	}
	rows, err := csv.NewReader(bytes.NewReader(out[i:])).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("ncu CSV: %w", err)
	}
	col := map[string]int{}
	for j, h := range rows[0] {
		col[h] = j
	}
	id, kernel, name, v := col["ID"], col["Kernel Name"], col["Metric Name"], col["Metric Value"]
	if _, ok := col["Kernel Name"]; !ok || name == 0 || v == 0 {
		return nil, fmt.Errorf("ncu CSV has no Kernel Name, Metric Name or Metric Value column: %v", rows[0])
	}
	var got []ncuRow
	for _, r := range rows[1:] {
		x, err := strconv.ParseFloat(strings.ReplaceAll(r[v], ",", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("ncu value %q of %s: %w", r[v], r[name], err)
		}
		got = append(got, ncuRow{id: r[id], kernel: r[kernel], metric: r[name], value: x})
	}
	return got, nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}
