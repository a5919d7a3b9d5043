// Tests of carve bench kernels.

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carve-gpu/carve/internal/bench"
)

// TestBenchKernels reads the synthetic records of internal/bench's tests
// (hand-written, not measured) as two jobs, in Markdown and in JSON.
func TestBenchKernels(t *testing.T) {
	fixture := filepath.Join("..", "..", "internal", "bench", "testdata", "kernels-synthetic.tsv")
	out, _, err := carve(t, "bench", "kernels", "--after-gap", "1s", "--top", "2", "a="+fixture, "b="+fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| a | 7 |", "| b | 7 |", "62.5%", "### b: top kernels by time", "| gemm_many<128> | many blocks | 2 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("kernels lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "| persistent_gemm_kernel |") != 2 || strings.Contains(out, "sm90_cluster_gemm_kernel") {
		t.Errorf("--top 2: want the two top kernels a job:\n%s", out)
	}
	out, _, err = carve(t, "bench", "kernels", "-o", "json", "--sms", "66", fixture)
	if err != nil {
		t.Fatal(err)
	}
	var sums []bench.KernelSummary
	if err := json.Unmarshal([]byte(out), &sums); err != nil || len(sums) != 1 || sums[0].Job != "kernels-synthetic" || sums[0].Kernels != 9 ||
		sums[0].Limits.SMs != 66 || len(sums[0].Top) != 6 { // on 66 SMs both persistent_gemm_kernel runs are many blocks: one row
		t.Errorf("-o json: %v %+v", err, sums)
	}
}
