// Tests of kernels.go on a hand-written recorder file: reading it, each
// kernel's residency and shape, the cut after the warm-up, the summaries
// and their tables.

package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// synthetic is a hand-written fixture in the recorder's format, not a
// measurement: two warm-up kernels, a 3 s pause, then seven kernels of
// 2400 us in all, one of each shape and duration bucket (see the file).
const synthetic = "testdata/kernels-synthetic.tsv"

func readSynthetic(t *testing.T) []Kernel {
	t.Helper()
	f, err := os.Open(synthetic)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ks, err := ReadKernels(f)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestReadKernels(t *testing.T) {
	ks := readSynthetic(t)
	if len(ks) != 9 {
		t.Fatalf("read %d kernels, want 9", len(ks))
	}
	k := ks[4]
	if k.Grid != [3]int{1024, 1, 1} || k.Block != [3]int{256, 1, 1} || k.Stream != 13 || k.Duration() != 20*time.Microsecond ||
		!strings.HasPrefix(k.Name, "void at::native::vectorized_elementwise_kernel<4, ") {
		t.Errorf("kernel 5: %+v", k)
	}
	if c := ks[7]; c.Launch != "coop-single" || c.StaticSmem != 4096 || c.Regs != 64 {
		t.Errorf("kernel 8: %+v", c)
	}
	for _, tc := range []struct{ line, want string }{
		{"1\t2\t1,1,1\t32,1,1\t0,0,0\tregular\t32\t0\t0\t0\t7", "11 tab-separated fields, want 12"},
		{"1\t2\t1,1\t32,1,1\t0,0,0\tregular\t32\t0\t0\t0\t7\tk", `"1,1": want x,y,z`},
		{"1\t2\t1,1,1\t32,1,1\t0,0,0\tregular\tmany\t0\t0\t0\t7\tk", `parsing "many"`},
		{"5\t2\t1,1,1\t32,1,1\t0,0,0\tregular\t32\t0\t0\t0\t7\tk", "ends (2) before it starts (5)"},
	} {
		_, err := ReadKernels(strings.NewReader("# a comment\n" + tc.line + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v, want line 2: %s", tc.line, err, tc.want)
		}
	}
}

func TestResidentAndShape(t *testing.T) {
	k := func(blocks, threads, regs, smem int) Kernel {
		return Kernel{Grid: [3]int{blocks, 1, 1}, Block: [3]int{threads, 1, 1}, Cluster: [3]int{0, 0, 0}, Launch: "regular", Regs: regs, DynamicSmem: smem}
	}
	for _, tc := range []struct {
		name     string
		k        Kernel
		resident int
		shape    string
	}{
		{"threads bound: 8 blocks of 256", k(1056, 256, 32, 0), 8, ShapeOneWave},
		{"one block past the wave", k(1057, 256, 32, 0), 8, ShapeMany},
		{"registers bound: 168 a thread, 12 warps", k(132, 384, 168, 0), 1, ShapeOneWave},
		{"registers rounded to 256 a warp: 33 a thread", k(100, 256, 33, 0), 6, ShapeOneWave},
		{"shared memory bound, with the reserved KiB", k(1000, 32, 16, 113<<10), 2, ShapeMany},
		{"smem of exactly half an SM less the reserve", k(1000, 32, 16, 114<<10), 1, ShapeMany},
		{"blocks-per-SM bound", k(132*32, 32, 16, 0), 32, ShapeOneWave},
		{"no registers reported", k(10, 1024, 0, 0), 2, ShapeOneWave},
	} {
		if r := H100.Resident(tc.k); r != tc.resident {
			t.Errorf("%s: %d resident, want %d", tc.name, r, tc.resident)
		}
		if s := H100.Shape(tc.k); s != tc.shape {
			t.Errorf("%s: shape %q, want %q", tc.name, s, tc.shape)
		}
	}
	coop := k(10, 32, 16, 0)
	coop.Launch = "coop-multi"
	cluster := k(10, 32, 16, 0)
	cluster.Cluster = [3]int{1, 2, 1}
	unit := k(100000, 32, 16, 0)
	unit.Cluster = [3]int{1, 1, 1}
	if H100.Shape(coop) != ShapeCooperative || H100.Shape(cluster) != ShapeCluster || H100.Shape(unit) != ShapeMany {
		t.Errorf("coop %q, cluster %q, 1x1x1 cluster %q", H100.Shape(coop), H100.Shape(cluster), H100.Shape(unit))
	}
}

func TestAfterLastGap(t *testing.T) {
	ks := readSynthetic(t)
	kept, skipped := AfterLastGap(ks, time.Second)
	if skipped != 2 || len(kept) != 7 || kept[0].Name != "void gemm_many<128>(float*, int)" {
		t.Errorf("after a 1 s gap: kept %d, skipped %d", len(kept), skipped)
	}
	if kept, skipped := AfterLastGap(ks, 0); skipped != 0 || len(kept) != 9 {
		t.Errorf("no gap: kept %d, skipped %d", len(kept), skipped)
	}
	// the overlap of kernels 4 and 5 is no gap; a gap longer than any keeps all
	if kept, skipped := AfterLastGap(ks, 4*time.Second); skipped != 0 || len(kept) != 9 {
		t.Errorf("a 4 s gap: kept %d, skipped %d", len(kept), skipped)
	}
	// 100 us between kernels 7 and 8: the last gap of at least 100 us
	if kept, skipped := AfterLastGap(ks, 100*time.Microsecond); skipped != 7 || kept[0].Launch != "coop-single" {
		t.Errorf("a 100 us gap: skipped %d, want 7 (the last such gap is before the cooperative kernel)", skipped)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummarizeKernels(t *testing.T) {
	kept, _ := AfterLastGap(readSynthetic(t), time.Second)
	s := SummarizeKernels("transformer-train", kept, H100, 3)
	if s.Kernels != 7 || !near(s.Seconds, 2400e-6) || !near(s.Span, 2840e-6) || !near(s.Busy, 2390.0/2840) {
		t.Errorf("kernels %d, %g s of kernels over %g s, busy %g", s.Kernels, s.Seconds, s.Span, s.Busy)
	}
	want := map[string]float64{"<50us": 60, "50-200us": 240, "200us-1ms": 600, ">1ms": 1500,
		ShapeMany: 700, ShapeOneWave: 1520, ShapeCooperative: 40, ShapeCluster: 140}
	for _, sh := range append(s.ByDuration, s.ByShape...) {
		if !near(sh.Fraction, want[sh.Name]/2400) {
			t.Errorf("%s: %.4f of the time, want %.4f", sh.Name, sh.Fraction, want[sh.Name]/2400)
		}
	}
	if len(s.ByDuration) != 4 || len(s.ByShape) != 4 {
		t.Errorf("%d duration buckets, %d shapes: every one, even empty", len(s.ByDuration), len(s.ByShape))
	}
	if len(s.Top) != 3 {
		t.Fatalf("%d top kernels, want 3", len(s.Top))
	}
	p, g := s.Top[0], s.Top[1]
	if p.Name != "persistent_gemm_kernel" || p.Shape != ShapeOneWave || p.Kernels != 1 || p.Resident != 1 || !near(p.MaxWaves, 1) || p.SmemKiB != 100 {
		t.Errorf("top 1: %+v", p)
	}
	if g.Name != "void gemm_many<128>(float*, int)" || g.Shape != ShapeMany || g.Kernels != 2 || !near(g.MeanUs, 300) || g.MinBlocks != 2048 ||
		g.MaxBlocks != 2048 || !near(g.MaxWaves, 2048.0/(132*8)) {
		t.Errorf("top 2: %+v", g)
	}
	if c := s.Top[2]; c.Shape != ShapeCluster || c.Resident != 3 {
		t.Errorf("top 3: %+v", c)
	}
	// the same kernel in two shapes is two rows
	all := SummarizeKernels("x", kept, H100, -1)
	n := 0
	for _, t := range all.Top {
		if t.Name == "persistent_gemm_kernel" {
			n++
		}
	}
	if len(all.Top) != 7-1 || n != 2 {
		t.Errorf("%d rows, %d of persistent_gemm_kernel", len(all.Top), n)
	}
	if e := SummarizeKernels("idle", nil, H100, 3); e.Kernels != 0 || e.Seconds != 0 || len(e.Top) != 0 {
		t.Errorf("no kernels: %+v", e)
	}
}

func TestSummarizeKernelFiles(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(synthetic)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bert.1.tsv", "bert.2.tsv"} {
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	var z bytes.Buffer // resnet's records gzipped
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	os.WriteFile(filepath.Join(dir, "resnet.7.tsv.gz"), z.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.tsv.gz"), b, 0o644)
	o := KernelOptions{AfterGap: time.Second, Top: 5, Limits: H100}
	sums, err := SummarizeKernelFiles([]string{"b=" + filepath.Join(dir, "bert.*.tsv"), filepath.Join(dir, "resnet.7.tsv.gz"), "b=" + synthetic}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].Job != "b" || sums[1].Job != "resnet" {
		t.Fatalf("jobs %+v", sums)
	}
	// three files of job b, three copies of the same records, merged: the
	// 7 kernels after the pause three times, the 2 before it left out
	if sums[0].Kernels != 21 || sums[0].Skipped != 6 || sums[1].Kernels != 7 || sums[1].Skipped != 2 {
		t.Errorf("b: %d kernels, %d skipped; resnet: %d kernels", sums[0].Kernels, sums[0].Skipped, sums[1].Kernels)
	}
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{nil, "name the records to read"},
		{[]string{"x=" + filepath.Join(dir, "none.*.tsv")}, "no such file (records of job x"},
		{[]string{"=" + synthetic}, "want JOB=FILE"},
		{[]string{"x=" + filepath.Join(dir, "[")}, "syntax error in pattern"},
		{[]string{filepath.Join(dir, "broken.tsv.gz")}, "broken.tsv.gz: gzip: invalid header"},
	} {
		if _, err := SummarizeKernelFiles(tc.specs, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.specs, err, tc.want)
		}
	}
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("1\t2\n"), 0o644)
	if _, err := SummarizeKernelFiles([]string{bad}, o); err == nil || !strings.Contains(err.Error(), bad+": line 1") {
		t.Errorf("a file not of records: %v", err)
	}
}

func TestWriteKernelTables(t *testing.T) {
	kept, skipped := AfterLastGap(readSynthetic(t), time.Second)
	s := SummarizeKernels("transformer-train", kept, H100, 10)
	s.Skipped = skipped
	var b bytes.Buffer
	if err := WriteKernelTables(&b, []KernelSummary{s}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| job | kernels | kernel time (s) | span (s) | GPU busy | <50us | 50-200us | 200us-1ms | >1ms | many blocks | one wave or less | cooperative | cluster |",
		"| transformer-train | 7 | 0.002 | 0.00 | 84.2% | 2.5% | 10.0% | 25.0% | 62.5% | 29.2% | 63.3% | 1.7% | 5.8% |",
		"132 SMs", "transformer-train: 2 warm-up kernels left out",
		"### transformer-train: top kernels by time",
		"| persistent_gemm_kernel | one wave or less | 1 | 62.5% | 1500.0 | 132 | 1.00 | 384 | 1 | 168 | 100.0 |",
		"| gemm_many<128> | many blocks | 2 | 25.0% | 300.0 | 2048 | 1.94 | 256 | 8 | 32 | 0.0 |",
		"| at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul>… | one wave or less |", // cut at 100

	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
	var back []KernelSummary
	var j bytes.Buffer
	json.NewEncoder(&j).Encode([]KernelSummary{s})
	if err := json.Unmarshal(j.Bytes(), &back); err != nil || back[0].Top[0].Name != "persistent_gemm_kernel" || !near(back[0].Top[0].Fraction, 0.625) || back[0].Limits != H100 {
		t.Errorf("JSON: %v %s", err, j.String())
	}
}

func TestShortKernelName(t *testing.T) {
	for in, want := range map[string]string{
		"void f<(int)3>(float*, g<int>(h))": "f<(int)3>",
		"sm90_xmma_gemm_bf16bf16":           "sm90_xmma_gemm_bf16bf16",
		"(weird)":                           "(weird)",
		strings.Repeat("é", 120):            strings.Repeat("é", 99) + "…",
	} {
		if got := shortKernelName(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestSummarizeZeroTime: kernels that took no time (start = end, as a
// clock of coarse resolution records very short ones) give shares of 0,
// which JSON can carry, not NaN.
func TestSummarizeZeroTime(t *testing.T) {
	s := SummarizeKernels("j", []Kernel{{Start: 5, End: 5, Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Name: "k"}}, H100, 3)
	for _, sh := range append(s.ByDuration, s.ByShape...) {
		if sh.Fraction != 0 {
			t.Errorf("%s: %v of no time", sh.Name, sh.Fraction)
		}
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("-o json: %v", err)
	}
}
