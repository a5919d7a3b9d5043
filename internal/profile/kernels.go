// carve profile --table: a program's kernel table (ctl.KernelTable), the
// first launch of each distinct kernel function measured by Nsight
// Compute, by its mangled name.

package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/carve-gpu/carve/internal/ctl"
)

// KernelMetrics are the ncu metrics a kernel table is made of: DRAM bytes
// read and written, the kernel's time and its DRAM throughput in percent
// of the GPU's peak.
var KernelMetrics = []string{"dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
	"dram__throughput.avg.pct_of_peak_sustained_elapsed"}

// KernelArgs are ncu's arguments that measure the first launch of each
// distinct kernel function of argv (and its children), named by mangled
// name, into the CSV file log.
func KernelArgs(log string, argv []string) []string {
	return append([]string{"--csv", "--print-units", "base", "--log-file", log, "--target-processes", "all",
		"--kernel-name-base", "mangled", "--print-kernel-base", "mangled", "--kernel-id", ":::1",
		"--metrics", strings.Join(KernelMetrics, ",")}, argv...)
}

// MeasureKernels runs argv under ncu (our input passed on to it, its
// output and errors to our errors) and returns its kernel table on the
// GPU named gpu.
func MeasureKernels(ncu, gpu string, argv []string) (*ctl.KernelTable, error) {
	dir, err := os.MkdirTemp("", "carve-kernels-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "ncu.csv")
	cmd := exec.Command(ncu, KernelArgs(log, argv)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	out, err := os.ReadFile(log)
	if err != nil {
		return nil, err
	}
	t, err := ParseKernels(out)
	if err != nil {
		return nil, err
	}
	t.GPU = gpu
	return t, nil
}

// ParseKernels reads a kernel table from ncu's --csv output of
// KernelArgs: each kernel profiled, by its name, with every metric of
// KernelMetrics; a name profiled twice (in two processes) keeps its first.
func ParseKernels(out []byte) (*ctl.KernelTable, error) {
	rows, err := ncuRows(out)
	if err != nil {
		return nil, err
	}
	type launch struct {
		kernel string
		got    map[string]float64
	}
	var order []string
	byID := map[string]*launch{}
	for _, r := range rows {
		l := byID[r.id]
		if l == nil {
			l = &launch{kernel: r.kernel, got: map[string]float64{}}
			byID[r.id] = l
			order = append(order, r.id)
		}
		l.got[r.metric] = r.value
	}
	t := &ctl.KernelTable{Kernels: map[string]ctl.Kernel{}}
	for _, id := range order {
		l := byID[id]
		for _, m := range KernelMetrics {
			if _, ok := l.got[m]; !ok {
				return nil, fmt.Errorf("ncu reported no %s for kernel %.80s", m, l.kernel)
			}
		}
		if _, seen := t.Kernels[l.kernel]; seen {
			continue
		}
		t.Kernels[l.kernel] = ctl.Kernel{Bytes: uint64(l.got[KernelMetrics[0]] + l.got[KernelMetrics[1]]),
			NS: uint64(l.got[KernelMetrics[2]]), Pct: l.got[KernelMetrics[3]]}
	}
	if len(t.Kernels) == 0 {
		return nil, errors.New("ncu profiled no kernel")
	}
	b, err := json.Marshal(t) // checked as carve reads it
	if err != nil {
		return nil, err
	}
	if _, err := ctl.ParseKernelTable(b); err != nil {
		return nil, fmt.Errorf("ncu's kernels make no kernel table: %w", err)
	}
	return t, nil
}
