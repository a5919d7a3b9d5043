// carve bench kernels: the kernels a job ran, as
// experiments/kernels/recorder.c records them, read and summarized by
// duration and by shape (how many blocks an SM holds, cooperative or
// cluster launches), with each job's top kernels, as Markdown tables.

package bench

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kernel is one kernel run as experiments/kernels/recorder.c writes it: a
// tab-separated line of start_ns end_ns gx,gy,gz bx,by,bz cx,cy,cz launch
// regs static_smem dynamic_smem device stream name.
type Kernel struct {
	Start, End              int64 // ns, CUPTI's clock
	Grid, Block, Cluster    [3]int
	Launch                  string // regular, coop-single, coop-multi, launch-N
	Regs                    int    // per thread
	StaticSmem, DynamicSmem int    // bytes per block
	Device, Stream          int
	Name                    string // demangled
}

// Blocks is the kernel's grid size.
func (k Kernel) Blocks() int { return k.Grid[0] * k.Grid[1] * k.Grid[2] }

// Threads is the kernel's block size.
func (k Kernel) Threads() int { return k.Block[0] * k.Block[1] * k.Block[2] }

// Duration is how long it ran.
func (k Kernel) Duration() time.Duration { return time.Duration(k.End - k.Start) }

// ReadKernels reads a recorder's lines (# lines are comments).
func ReadKernels(r io.Reader) ([]Kernel, error) {
	var out []Kernel
	names := map[string]string{} // a job runs few kernels many times: one copy of each name
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // demangled template names run long
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := parseKernel(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w (want the recorder's start_ns end_ns grid block cluster launch regs static_smem dynamic_smem device stream name)", n, err)
		}
		if name, ok := names[k.Name]; ok {
			k.Name = name
		} else {
			names[k.Name] = k.Name
		}
		out = append(out, k)
	}
	return out, sc.Err()
}

func parseKernel(line string) (Kernel, error) {
	f := strings.SplitN(line, "\t", 12)
	if len(f) != 12 {
		return Kernel{}, fmt.Errorf("%d tab-separated fields, want 12", len(f))
	}
	var k Kernel
	var errs []error
	num := func(s string) int {
		v, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	dim := func(s string) (d [3]int) {
		p := strings.Split(s, ",")
		if len(p) != 3 {
			errs = append(errs, fmt.Errorf("%q: want x,y,z", s))
			return d
		}
		for i := range d {
			d[i] = num(p[i])
		}
		return d
	}
	start, err1 := strconv.ParseInt(f[0], 10, 64)
	end, err2 := strconv.ParseInt(f[1], 10, 64)
	errs = append(errs, err1, err2)
	k = Kernel{Start: start, End: end, Grid: dim(f[2]), Block: dim(f[3]), Cluster: dim(f[4]), Launch: f[5], Regs: num(f[6]),
		StaticSmem: num(f[7]), DynamicSmem: num(f[8]), Device: num(f[9]), Stream: num(f[10]), Name: f[11]}
	for _, err := range errs {
		if err != nil {
			return k, err
		}
	}
	if end < start {
		return k, fmt.Errorf("ends (%d) before it starts (%d)", end, start)
	}
	return k, nil
}

// SMLimits are what bounds the blocks an SM holds at once.
type SMLimits struct {
	SMs              int `json:"sms"`
	RegsPerSM        int `json:"regs_per_sm"`
	SmemPerSM        int `json:"smem_per_sm"`             // bytes
	SmemPerBlockRsvd int `json:"smem_reserved_per_block"` // bytes the driver keeps per resident block
	ThreadsPerSM     int `json:"threads_per_sm"`
	BlocksPerSM      int `json:"blocks_per_sm"`
}

// H100 is an H100 SXM's: 132 SMs, 64 Ki registers, 228 KiB of shared
// memory (1 KiB of it reserved per block), 2048 threads and 32 blocks each.
var H100 = SMLimits{SMs: 132, RegsPerSM: 65536, SmemPerSM: 228 << 10, SmemPerBlockRsvd: 1 << 10, ThreadsPerSM: 2048, BlocksPerSM: 32}

// Resident estimates how many of k's blocks one SM holds at once: the
// least of what its threads (in whole warps), its registers (a warp's
// allocated in units of 256) and its shared memory (with the reserved
// KiB) allow, and the blocks-per-SM limit; at least 1.
func (l SMLimits) Resident(k Kernel) int {
	warps := max(1, (k.Threads()+31)/32)
	n := min(l.BlocksPerSM, l.ThreadsPerSM/32/warps)
	if k.Regs > 0 {
		perWarp := (k.Regs*32 + 255) / 256 * 256
		n = min(n, l.RegsPerSM/perWarp/warps)
	}
	n = min(n, l.SmemPerSM/(k.StaticSmem+k.DynamicSmem+l.SmemPerBlockRsvd))
	return max(1, n)
}

// The shapes a kernel can have, as slicing BE kernels sees them.
const (
	ShapeMany        = "many blocks"      // more blocks than the GPU holds at once: sliceable by block index
	ShapeOneWave     = "one wave or less" // all its blocks resident at once (persistent kernels too): slicing does not shorten it
	ShapeCooperative = "cooperative"      // a cooperative launch: its blocks must all be resident
	ShapeCluster     = "cluster"          // launched in thread-block clusters
)

// KernelShapes are the shapes in the order the table shows them.
var KernelShapes = []string{ShapeMany, ShapeOneWave, ShapeCooperative, ShapeCluster}

// Shape is k's shape: cooperative and cluster launches by how they were
// launched, the others by whether their grid is larger than one wave (SMs
// x the blocks an SM holds).
func (l SMLimits) Shape(k Kernel) string {
	switch {
	case strings.HasPrefix(k.Launch, "coop"):
		return ShapeCooperative
	case max(1, k.Cluster[0])*max(1, k.Cluster[1])*max(1, k.Cluster[2]) > 1:
		return ShapeCluster
	case k.Blocks() > l.SMs*l.Resident(k):
		return ShapeMany
	}
	return ShapeOneWave
}

// DurationBuckets are the kernel durations the table splits GPU time by:
// each bucket holds the kernels shorter than its bound and not shorter
// than the one before; the last has no bound.
var DurationBuckets = []struct {
	Name  string
	Below time.Duration
}{{"<50us", 50 * time.Microsecond}, {"50-200us", 200 * time.Microsecond}, {"200us-1ms", time.Millisecond}, {">1ms", 0}}

func durationBucket(d time.Duration) string {
	for _, b := range DurationBuckets {
		if b.Below == 0 || d < b.Below {
			return b.Name
		}
	}
	return ""
}

// Share is a part of a job's GPU time.
type Share struct {
	Name     string  `json:"name"`
	Kernels  int     `json:"kernels"`
	Seconds  float64 `json:"seconds"`
	Fraction float64 `json:"fraction"` // of the job's kernel time
}

// TopKernel is one kernel (a name and a shape) among those a job spent the
// most time in.
type TopKernel struct {
	Share
	Shape      string  `json:"shape"`
	MeanUs     float64 `json:"mean_us"`
	MinBlocks  int     `json:"min_blocks"`
	MaxBlocks  int     `json:"max_blocks"`
	Threads    int     `json:"threads_per_block"` // of its longest run
	Resident   int     `json:"resident_per_sm"`   // of its longest run
	Regs       int     `json:"regs_per_thread"`   // of its longest run
	SmemKiB    float64 `json:"smem_kib"`          // static and dynamic, of its longest run
	MaxWaves   float64 `json:"max_waves"`         // the most blocks / (SMs x resident)
	LaunchType string  `json:"launch"`
}

// KernelSummary is where one job's GPU time went.
type KernelSummary struct {
	Job        string      `json:"job"`
	Kernels    int         `json:"kernels"`
	Skipped    int         `json:"skipped_warmup_kernels"` // before the last idle gap (-after-gap)
	Seconds    float64     `json:"kernel_seconds"`         // the kernels' durations summed
	Span       float64     `json:"span_seconds"`           // first start to last end
	Busy       float64     `json:"busy_fraction"`          // of the span, some kernel running
	ByDuration []Share     `json:"by_duration"`
	ByShape    []Share     `json:"by_shape"`
	Top        []TopKernel `json:"top"`
	Limits     SMLimits    `json:"limits"`
}

// AfterLastGap keeps the kernels after the last stretch of at least gap in
// which none ran (a job's warm-up, then a pause before it is measured), and
// says how many it left out. A gap of 0 keeps them all.
func AfterLastGap(ks []Kernel, gap time.Duration) ([]Kernel, int) {
	if gap <= 0 || len(ks) == 0 {
		return ks, 0
	}
	s := sortedByStart(ks)
	from, end := 0, s[0].End
	for i, k := range s[1:] {
		if time.Duration(k.Start-end) >= gap {
			from = i + 1
		}
		end = max(end, k.End)
	}
	return s[from:], from
}

func sortedByStart(ks []Kernel) []Kernel {
	s := slices.Clone(ks)
	slices.SortStableFunc(s, func(a, b Kernel) int { return cmp.Compare(a.Start, b.Start) })
	return s
}

// SummarizeKernels splits a job's kernel time by duration and by shape and
// names its top kernels by time.
func SummarizeKernels(job string, ks []Kernel, l SMLimits, top int) KernelSummary {
	s := KernelSummary{Job: job, Kernels: len(ks), Limits: l}
	if len(ks) == 0 {
		return s
	}
	var total, busy time.Duration
	byDur, byShape := map[string]*Share{}, map[string]*Share{}
	type key struct{ name, shape string }
	byKernel := map[key]*TopKernel{}
	longest := map[key]time.Duration{}
	sorted := sortedByStart(ks)
	first, end := sorted[0].Start, sorted[0].Start
	for _, k := range sorted {
		d := k.Duration()
		total += d
		if k.End > end { // the union of the kernels' times
			busy += time.Duration(k.End - max(k.Start, end))
			end = k.End
		}
		add := func(m map[string]*Share, name string) {
			if m[name] == nil {
				m[name] = &Share{Name: name}
			}
			m[name].Kernels++
			m[name].Seconds += d.Seconds()
		}
		shape := l.Shape(k)
		add(byDur, durationBucket(d))
		add(byShape, shape)
		kk := key{k.Name, shape}
		t := byKernel[kk]
		if t == nil {
			t = &TopKernel{Share: Share{Name: k.Name}, Shape: shape, MinBlocks: k.Blocks(), LaunchType: k.Launch}
			byKernel[kk] = t
		}
		t.Kernels++
		t.Seconds += d.Seconds()
		t.MinBlocks, t.MaxBlocks = min(t.MinBlocks, k.Blocks()), max(t.MaxBlocks, k.Blocks())
		r := l.Resident(k)
		t.MaxWaves = max(t.MaxWaves, float64(k.Blocks())/float64(l.SMs*r))
		if d >= longest[kk] {
			longest[kk] = d
			t.Threads, t.Resident, t.Regs = k.Threads(), r, k.Regs
			t.SmemKiB = float64(k.StaticSmem+k.DynamicSmem) / 1024
		}
	}
	s.Seconds = total.Seconds()
	s.Span = time.Duration(end - first).Seconds()
	if s.Span > 0 {
		s.Busy = busy.Seconds() / s.Span
	}
	frac := func(x float64) float64 {
		if s.Seconds == 0 { // no kernel time: every share is none of it
			return 0
		}
		return x / s.Seconds
	}
	for _, b := range DurationBuckets {
		sh := Share{Name: b.Name}
		if p := byDur[b.Name]; p != nil {
			sh = *p
		}
		sh.Fraction = frac(sh.Seconds)
		s.ByDuration = append(s.ByDuration, sh)
	}
	for _, name := range KernelShapes {
		sh := Share{Name: name}
		if p := byShape[name]; p != nil {
			sh = *p
		}
		sh.Fraction = frac(sh.Seconds)
		s.ByShape = append(s.ByShape, sh)
	}
	for _, t := range byKernel {
		t.Fraction = frac(t.Seconds)
		t.MeanUs = t.Seconds / float64(t.Kernels) * 1e6
		s.Top = append(s.Top, *t)
	}
	slices.SortFunc(s.Top, func(a, b TopKernel) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Shape, b.Shape))
	})
	if top >= 0 && len(s.Top) > top {
		s.Top = s.Top[:top]
	}
	return s
}

// WriteKernelTables prints the summaries as Markdown: one table of each
// job's GPU time by kernel duration and by shape, then each job's top
// kernels.
func WriteKernelTables(w io.Writer, sums []KernelSummary) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	pct := func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }
	p("| job | kernels | kernel time (s) | span (s) | GPU busy |")
	for _, b := range DurationBuckets {
		p(" %s |", b.Name)
	}
	for _, sh := range KernelShapes {
		p(" %s |", sh)
	}
	p("\n|---|---:|---:|---:|---:|%s\n", strings.Repeat("---:|", len(DurationBuckets)+len(KernelShapes)))
	for _, s := range sums {
		p("| %s | %d | %.3f | %.2f | %s |", mdCell(s.Job), s.Kernels, s.Seconds, s.Span, pct(s.Busy))
		for _, sh := range append(slices.Clone(s.ByDuration), s.ByShape...) {
			p(" %s |", pct(sh.Fraction))
		}
		p("\n")
	}
	if len(sums) > 0 {
		l := sums[0].Limits
		p("\nShares of each job's kernel time (the kernels' durations summed). Shapes: many blocks, more blocks than one wave\n"+
			"(%d SMs x the blocks an SM holds, from threads, registers and shared memory: %d registers, %d KiB (%d KiB reserved a block),\n"+
			"%d threads, %d blocks an SM); one wave or less, persistent kernels among them; cooperative launches; cluster launches.\n",
			l.SMs, l.RegsPerSM, l.SmemPerSM>>10, l.SmemPerBlockRsvd>>10, l.ThreadsPerSM, l.BlocksPerSM)
	}
	for _, s := range sums {
		if s.Skipped > 0 {
			p("%s: %d warm-up kernels left out (before the last idle gap).\n", s.Job, s.Skipped)
		}
	}
	for _, s := range sums {
		p("\n### %s: top kernels by time\n\n", mdCell(s.Job))
		p("| kernel | shape | runs | time | mean us | blocks | waves | threads | resident/SM | regs | smem KiB |\n")
		p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range s.Top {
			blocks := strconv.Itoa(t.MinBlocks)
			if t.MaxBlocks != t.MinBlocks {
				blocks += "-" + strconv.Itoa(t.MaxBlocks)
			}
			p("| %s | %s | %d | %s | %.1f | %s | %.2f | %d | %d | %d | %.1f |\n", mdCell(shortKernelName(t.Name)), t.Shape, t.Kernels,
				pct(t.Fraction), t.MeanUs, blocks, t.MaxWaves, t.Threads, t.Resident, t.Regs, t.SmemKiB)
		}
	}
	return bw.Flush()
}

// shortKernelName is a demangled name without "void " and its parameter
// list, cut to 100 characters.
func shortKernelName(s string) string {
	s = strings.TrimPrefix(s, "void ")
	if strings.HasSuffix(s, ")") { // drop the outermost trailing (...)
		depth := 0
		for i := len(s) - 1; i >= 0; i-- {
			switch s[i] {
			case ')':
				depth++
			case '(':
				depth--
			}
			if depth == 0 {
				if i > 0 {
					s = s[:i]
				}
				break
			}
		}
	}
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}

// mdCell is s safe in a Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// KernelOptions are carve bench kernels' flags.
type KernelOptions struct {
	AfterGap time.Duration // keep each job's kernels after its last idle gap this long (0: all)
	Top      int           // top kernels per job
	Limits   SMLimits
}

// readKernelFile reads a recorder's file, gzipped if its name ends in .gz.
func readKernelFile(path string) ([]Kernel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer z.Close()
		r = z
	}
	return ReadKernels(r)
}

// SummarizeKernelFiles reads each job's records and summarizes them. A
// spec is JOB=PATH, or PATH for a job named by the file's name up to its
// first dot; PATH may be a glob (one file per process, the recorder's %p),
// a job named twice reads all its files, and a file whose name ends in .gz
// is read through gzip.
func SummarizeKernelFiles(specs []string, o KernelOptions) ([]KernelSummary, error) {
	if len(specs) == 0 {
		return nil, errors.New("name the records to read: JOB=FILE (FILE may be a glob, e.g. densenet161='out/densenet161.*.tsv')")
	}
	if o.Limits.SMs < 1 {
		return nil, fmt.Errorf("%d SMs: want at least 1 (an H100 has %d)", o.Limits.SMs, H100.SMs)
	}
	var jobs []string
	files := map[string][]string{}
	for _, spec := range specs {
		job, path, ok := strings.Cut(spec, "=")
		if !ok {
			path, job = spec, strings.SplitN(filepath.Base(spec), ".", 2)[0]
		}
		if job == "" || path == "" {
			return nil, fmt.Errorf("%q: want JOB=FILE", spec)
		}
		matches, err := filepath.Glob(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no such file (records of job %s; the recorder writes CARVE_KERNELS_OUT)", path, job)
		}
		if files[job] == nil {
			jobs = append(jobs, job)
		}
		files[job] = append(files[job], matches...)
	}
	var out []KernelSummary
	for _, job := range jobs {
		var ks []Kernel
		for _, path := range files[job] {
			k, err := readKernelFile(path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			ks = append(ks, k...)
		}
		kept, skipped := AfterLastGap(ks, o.AfterGap)
		s := SummarizeKernels(job, kept, o.Limits, o.Top)
		s.Skipped = skipped
		out = append(out, s)
	}
	return out, nil
}
