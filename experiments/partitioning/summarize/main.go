// Command summarize turns the output of run.sh and clocks.sh into tables
// (summary.md) and a plot of a process being resized (resize.png, .svg).
//
//	go run ./experiments/partitioning/summarize RESULTS_DIR
//
// RESULTS_DIR holds corun/ (run.sh's output), clocks/ (clocks.sh's),
// launch/ (check.sh's) and startup/ (startup.sh's).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

type rec map[string]any

func (r rec) str(k string) string { s, _ := r[k].(string); return s }
func (r rec) num(k string) float64 {
	f, _ := r[k].(float64)
	return f
}

func readJSONL(path string) ([]rec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []rec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r rec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// byLabel collects each label's median_ms over repetitions.
func byLabel(rs []rec) map[string][]float64 {
	m := map[string][]float64{}
	for _, r := range rs {
		if l := r.str("label"); l != "" && r["median_ms"] != nil {
			m[l] = append(m[l], r.num("median_ms"))
		}
	}
	return m
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: summarize RESULTS_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "summarize:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	corun, err := readJSONL(filepath.Join(dir, "corun", "results.jsonl"))
	if err != nil {
		return err
	}
	clocks, err := readJSONL(filepath.Join(dir, "clocks", "results.jsonl"))
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "summary.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	w := io.Writer(f)
	fmt.Fprintf(w, "# Partitioning on the H100: summary\n\nMade by `go run ./experiments/partitioning/summarize %s` from corun/ (`run.sh`), clocks/ (`clocks.sh`), launch/ (`check.sh`) and startup/ (`startup.sh`, and the command in `startup/connections.cmd`). Times are medians of per-kernel times (CUDA events) over the middle 70%% of a 6 s window that co-runners share; where a run was repeated, the median of the repetitions.\n\n", dir)
	for _, r := range append(corun[:1:1], clocks[:1]...) {
		fmt.Fprintf(w, "- device: %s, driver %s, %s\n", r.str("gpu"), r.str("driver"), r.str("date"))
	}
	writeDiscovery(w, corun)
	writeCorun(w, byLabel(clocks), clocks)
	writeSame(w, byLabel(corun))
	if err := writeResize(w, dir, corun); err != nil {
		return err
	}
	launch, err := readJSONL(filepath.Join(dir, "launch", "results.jsonl"))
	if err != nil {
		return err
	}
	writeLaunchCost(w, launch)
	startup, err := readJSONL(filepath.Join(dir, "startup", "results.jsonl"))
	if err != nil {
		return err
	}
	conns, err := readJSONL(filepath.Join(dir, "startup", "connections.jsonl"))
	if err != nil {
		return err
	}
	writeStartup(w, startup, conns)
	for _, r := range corun {
		if r.str("step") == "resnet50_compare" {
			fmt.Fprintf(w, "\n## ResNet-50 outputs\n\nLogits of 16 images with and without `carve run -n 20`: max abs difference %g, bitwise equal: %v.\n", r.num("max_abs_diff"), r["bitwise_equal"])
		}
	}
	return nil
}

func writeDiscovery(w io.Writer, rs []rec) {
	fmt.Fprintf(w, "\n## Topology discovery\n\n")
	for _, r := range rs {
		switch r.str("step") {
		case "topo_discover":
			fmt.Fprintf(w, "- `carve topo --refresh`: %.0f ms wall, child process included\n", r.num("wall_ms"))
		case "topo_cached":
			fmt.Fprintf(w, "- `carve topo` from the cache: %.0f ms wall\n", r.num("wall_ms"))
		case "topo_repeat":
			fmt.Fprintf(w, "- four discoveries identical: %v\n", r["identical_over_4_discoveries"])
		case "gpc_cluster_size":
			fmt.Fprintf(w, "- TPCs per cluster group with clusters of %.0f: %v\n", r.num("cluster"), r["tpcs_per_group"])
		}
	}
}

func pct(a, b float64) string { return fmt.Sprintf("%+.1f%%", 100*(a/b-1)) }

func writeCorun(w io.Writer, ms map[string][]float64, rs []rec) {
	fmt.Fprintf(w, "\n## Disjoint partitions: each program beside another in the other half\n\n")
	fmt.Fprintf(w, "A is the CUDA C FMA program on TPCs 0-32; the neighbour runs on TPCs 33-65. All under MPS.\n\n")
	fmt.Fprintf(w, "| neighbour | A alone (ms) | A beside it (ms) | A change | neighbour alone (ms) | neighbour beside A (ms) | neighbour change | SM clock alone / together (MHz) | power together (W) |\n|---|---|---|---|---|---|---|---|---|\n")
	clk := map[string]rec{}
	for _, r := range rs {
		if r.str("step") == "clocks" {
			clk[r.str("window")] = r // the last repetition
		}
	}
	for _, n := range []struct{ key, name string }{
		{"A2", "A2: the same CUDA C FMA program"},
		{"B32", "B32: PyTorch fp32 matmul 4096 (CUDA cores)"},
		{"B16", "B16: PyTorch bf16 matmul 8192 (tensor cores)"},
	} {
		aAlone, aWith := median(ms["A_alone"]), median(ms["A_with_"+n.key])
		nAlone, nWith := median(ms[n.key+"_alone"]), median(ms[n.key+"_with_A"])
		fmt.Fprintf(w, "| %s | %.4f | %.4f | %s | %.4f | %.4f | %s | %.0f / %.0f | %.0f |\n", n.name,
			aAlone, aWith, pct(aWith, aAlone), nAlone, nWith, pct(nWith, nAlone),
			clk[n.key+"_alone"].num("sm_mhz_median"), clk["A_with_"+n.key].num("sm_mhz_median"), clk["A_with_"+n.key].num("power_w_median"))
	}
	fmt.Fprintf(w, "\nA alone: SM clock %.0f MHz at %.0f W.\n", clk["A_alone"].num("sm_mhz_median"), clk["A_alone"].num("power_w_median"))
}

func writeSame(w io.Writer, ms map[string][]float64) {
	fmt.Fprintf(w, "\n## Same program pair, disjoint vs overlapping partitions (run.sh)\n\n| | A (FMA, TPCs 0-32) | B (bf16 matmul) |\n|---|---|---|\n")
	fmt.Fprintf(w, "| alone (ms) | %.4f | %.4f (on 33-65), %.4f (on 0-32) |\n", median(ms["A_alone_0-32"]), median(ms["B_alone_33-65"]), median(ms["B_alone_0-32"]))
	fmt.Fprintf(w, "| together, disjoint (B on 33-65) | %.4f (%s) | %.4f (%s) |\n",
		median(ms["A_with_B_disjoint"]), pct(median(ms["A_with_B_disjoint"]), median(ms["A_alone_0-32"])),
		median(ms["B_with_A_disjoint"]), pct(median(ms["B_with_A_disjoint"]), median(ms["B_alone_33-65"])))
	fmt.Fprintf(w, "| together, same TPCs 0-32 | %.4f (%s) | %.4f (%s) |\n",
		median(ms["A_with_B_same_0-32"]), pct(median(ms["A_with_B_same_0-32"]), median(ms["A_alone_0-32"])),
		median(ms["B_with_A_same_0-32"]), pct(median(ms["B_with_A_same_0-32"]), median(ms["B_alone_0-32"])))
}

func writeResize(w io.Writer, dir string, rs []rec) error {
	b, err := os.ReadFile(filepath.Join(dir, "corun", "trace.json"))
	if err != nil {
		return err
	}
	var trace []struct{ T, MS float64 }
	if err := json.Unmarshal(b, &trace); err != nil {
		return err
	}
	type set struct {
		before, after float64
		tpcs          string
	}
	sets := []set{{0, 0, "0-65"}}
	for _, r := range rs {
		if r.str("step") == "set" {
			sets = append(sets, set{r.num("t_before"), r.num("t_after"), r.str("tpcs")})
		}
	}
	phases := make([][]float64, len(sets))
	var next []float64 // first launch after each set returned
	for _, p := range trace {
		i := 0
		for j, s := range sets {
			if p.T >= s.after {
				i = j
			}
		}
		phases[i] = append(phases[i], p.MS)
	}
	for _, s := range sets[1:] {
		for _, p := range trace {
			if p.T >= s.after {
				next = append(next, p.MS)
				break
			}
		}
	}
	fmt.Fprintf(w, "\n## `carve set` on a running PyTorch process (bf16 matmul 8192)\n\n| TPCs | iterations | median ms | vs 66 TPCs | TPC ratio |\n|---|---|---|---|---|\n")
	for i, s := range sets {
		n := tpcCount(s.tpcs)
		fmt.Fprintf(w, "| %s | %d | %.3f | %.2fx | %.2fx |\n", s.tpcs, len(phases[i]), median(phases[i]), median(phases[i])/median(phases[0]), 66/float64(n))
	}
	fmt.Fprintf(w, "\nFirst iteration that started after each `carve set` returned: %v ms.\n\n![resize](resize.png)\n", round3(next))

	p := plot.New()
	p.Title.Text = "carve set on a running PyTorch matmul loop"
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "matmul time (ms)"
	pts := make(plotter.XYs, len(trace))
	for i, q := range trace {
		pts[i] = plotter.XY{X: q.T - trace[0].T, Y: q.MS}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Radius = vg.Points(1)
	p.Add(sc)
	for _, s := range sets[1:] {
		x := s.after - trace[0].T
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: 6}})
		if err != nil {
			return err
		}
		l.Color = color.RGBA{R: 200, A: 255}
		p.Add(l)
		p.Legend.Add("set -t "+s.tpcs, l)
	}
	for _, ext := range []string{"png", "svg"} {
		if err := p.Save(8*vg.Inch, 4*vg.Inch, filepath.Join(dir, "resize."+ext)); err != nil {
			return err
		}
	}
	return nil
}

func tpcCount(spec string) int {
	var lo, hi int
	if _, err := fmt.Sscanf(spec, "%d-%d", &lo, &hi); err != nil {
		return 1
	}
	return hi - lo + 1
}

func round3(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*1000+0.5)) / 1000
	}
	return out
}

func writeLaunchCost(w io.Writer, rs []rec) {
	var none, shim, ratios []float64
	var last float64
	for _, r := range rs {
		switch r.str("label") {
		case "none":
			last = r.num("median_ns")
			none = append(none, last)
		case "shim_all":
			shim = append(shim, r.num("median_ns"))
			ratios = append(ratios, r.num("median_ns")/last)
		}
	}
	if len(none) == 0 {
		return
	}
	sort.Float64s(ratios)
	fmt.Fprintf(w, "\n## Launch cost\n\nHost time per empty kernel launch (`launchcost.cu`, 50 rounds of 1000 launches, median round), pinned to one CPU, %d alternations without and with the shim (`carve run -t all`), no MPS:\n\n", len(none))
	fmt.Fprintf(w, "| | ns per launch (median over alternations) |\n|---|---|\n| no shim | %.0f |\n| shim | %.0f |\n| ratio | %.3f |\n\nPer-alternation ratios range %.2f to %.2f: the machine's noise is larger than the difference.\n",
		median(none), median(shim), median(shim)/median(none), ratios[0], ratios[len(ratios)-1])
}

// medianOf is the median of field k over the records whose step is step
// (and, when mode is not "", whose mode is mode).
func medianOf(rs []rec, step, mode, k string) float64 {
	var xs []float64
	for _, r := range rs {
		if r.str("step") == step && (mode == "" || r.str("mode") == mode) {
			xs = append(xs, r.num(k))
		}
	}
	return median(xs)
}

func writeStartup(w io.Writer, rs, conns []rec) {
	fmt.Fprintf(w, "\n## Startup and where the launch cost goes\n\nExec to exit of `first.cu` (context, one empty kernel), median of 30 alternations:\n\n| | plain (ms) | under carve run (ms) |\n|---|---|---|\n")
	for _, m := range []string{"no_mps", "mps"} {
		fmt.Fprintf(w, "| %s | %.1f | %.1f |\n", m, medianOf(rs, "startup", m, "plain_us")/1000, medianOf(rs, "startup", m, "carve_us")/1000)
	}
	fmt.Fprintf(w, "\nUnder MPS, 15 alternations: default connections %.1f ms, `CUDA_DEVICE_MAX_CONNECTIONS=8` %.1f ms, carve run (which sets 8) %.1f ms. carve run itself adds %.1f ms; the 8 connections cost the rest (`carve run --connections 2` asks for the client default of 2 instead; not measured here).\n",
		medianOf(conns, "mps_connections", "", "default_us")/1000, medianOf(conns, "mps_connections", "", "conn8_us")/1000,
		medianOf(conns, "mps_connections", "", "carve_us")/1000,
		(medianOf(conns, "mps_connections", "", "carve_us")-medianOf(conns, "mps_connections", "", "conn8_us"))/1000)
	by := map[string][]float64{}
	for _, r := range rs {
		if l := r.str("label"); l != "" {
			by[l] = append(by[l], r.num("median_ns"))
		}
	}
	none := median(by["none"])
	fmt.Fprintf(w, "\nHost ns per empty launch, 20 alternations: no hook %.0f; a hook that returns at once (`-DCARVE_MEASURE_DISPATCH`, the driver's callback dispatch alone) %.0f (%s); the full shim %.0f (%s).\n",
		none, median(by["dispatch_only"]), pct(median(by["dispatch_only"]), none), median(by["shim_all"]), pct(median(by["shim_all"]), none))
}
