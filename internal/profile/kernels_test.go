// Tests of kernels.go: ncu's CSV of each kernel's first launch read into
// a kernel table, and ncu's arguments for it.

package profile

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/ctl"
)

const (
	copyKernel = "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE8_clEvEUlfE_EEvS4_RKT_EUliE_EEviT1_"
	gemmKernel = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
)

func TestParseKernels(t *testing.T) {
	// In the form ncu --csv --print-units base writes (a PyTorch copy
	// kernel and a cuBLAS GEMM, their first launches), with its notes.
	b, err := os.ReadFile("testdata/ncu-kernels.csv")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseKernels(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ctl.Kernel{copyKernel: {Bytes: 25718784 + 25690112, NS: 23520, Pct: 81.37}, gemmKernel: {Bytes: 3 << 20, NS: 40896, Pct: 6.12}}
	if len(k.Kernels) != 2 || k.Kernels[copyKernel] != want[copyKernel] || k.Kernels[gemmKernel] != want[gemmKernel] || k.ComputeBound() != 1 {
		t.Errorf("kernels %+v, want %+v", k.Kernels, want)
	}
	// the same kernel again, in a second process: its first kept
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var again []string
	for _, l := range lines {
		if strings.HasPrefix(l, `"0",`) {
			again = append(again, strings.Replace(strings.Replace(l, `"0",`, `"2",`, 1), "25,718,784", "1", 1))
		}
	}
	k, err = ParseKernels([]byte(string(b) + strings.Join(again, "\n") + "\n"))
	if err != nil || k.Kernels[copyKernel] != want[copyKernel] {
		t.Errorf("a kernel profiled twice: %+v, %v", k, err)
	}
	var short []string // the GEMM's throughput missing
	for _, l := range lines {
		if !strings.Contains(l, "pct_of_peak") || !strings.HasPrefix(l, `"1",`) {
			short = append(short, l)
		}
	}
	if _, err := ParseKernels([]byte(strings.Join(short, "\n"))); err == nil || !strings.Contains(err.Error(), "dram__throughput") {
		t.Errorf("a metric missing: %v", err)
	}
	for _, bad := range []string{"", "==PROF== nothing profiled\n", strings.Join(lines[:4], "\n")} {
		if _, err := ParseKernels([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestKernelArgs(t *testing.T) {
	a := KernelArgs("/tmp/x.csv", []string{"python3", "infer.py"})
	for _, want := range [][]string{{"--kernel-id", ":::1"}, {"--kernel-name-base", "mangled"}, {"--print-kernel-base", "mangled"},
		{"--log-file", "/tmp/x.csv"}, {"--metrics", strings.Join(KernelMetrics, ",")}} {
		if i := slices.Index(a, want[0]); i < 0 || a[i+1] != want[1] {
			t.Errorf("ncu's arguments %v: want %s %s", a, want[0], want[1])
		}
	}
	if !slices.Equal(a[len(a)-2:], []string{"python3", "infer.py"}) {
		t.Errorf("ncu's arguments %v end in the program", a)
	}
}
