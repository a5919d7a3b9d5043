// carve bench serve: LS services beside BE jobs, latency and throughput
// under each way of sharing the GPU; and the parsing of its --rates and
// --tide settings.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/carve-gpu/carve/internal/bench"
	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/report"
)

func newServeCmd() *cobra.Command {
	var f benchFlags
	var rates, tide []string
	o := bench.ServeOptions{Progress: progressBar("serve"), Log: os.Stderr}
	c := &cobra.Command{
		Use:   "serve",
		Short: "LS services beside BE jobs: latency and throughput under each way of sharing the GPU",
		Long: `serve runs a latency-sensitive service (PyTorch, random weights, batch 1,
from CUDA graphs or eagerly: resnet50, mobilenet_v3_large, efficientnet_b0,
bert-base at
sequence 128, or llm, a Llama-shaped causal LM of about 440M parameters that
answers each request with a 32-token prefill and 16 greedily decoded tokens:
from CUDA graphs, by a decode loop of carve's own over the transformers
model's layers through a static KV cache, checked at start against the
library's generation; eagerly, by the library's generation through its
dynamic cache) with requests arriving open-loop (Poisson, or on/off
bursts) and its latency counted from arrival to its result (llm: its last
token), queueing included, beside a best-effort job in a closed loop
(densenet161 or vit_b_16 inference or resnet50 training, batch 64 images; or
transformer-train, a 220M-parameter decoder trained with AdamW and bf16
autocast on 64 sequences of 256 tokens a step). For each pair and rate it
measures each alone on the whole GPU, then together under time slicing, MPS
without limits, MPS percentages, carve's static partitions and carve tide
(each setting a point), and reports the LS's
p50/p99/p99.9, its SLO attainment (SLO = 2 x its p99 alone at the same rate;
under a tide setting whose slo= is a time, also its attainment of that, OWN
SLO MET),
under carve tide the p99 of its busy periods (from its control block: an
input of the estimate --slo bounds) and the BE's throughput (img/s, or seq/s for transformer-train), with a plot
of LS p99 against BE throughput. ` + fmt.Sprintf(`Beside an LS, the BE runs %v on after
the LS's last request, beside the LS idle (it stays until the run ends, as
a service between requests does), and BE RECOVERY is the time from that request's
completion until the BE's rate (over its last steps of %v or more) is
back at %g%% of its rate alone.`, bench.RecoveryTail, bench.RecoveryWindow, 100*bench.RecoveryShare) + ` The result's params name each model's
parameter count, as its program reported it.

--orders be-first also measures each setup with the BE started first: the
LS starts, warms up and captures its graph while the BE runs, then serves,
and the BE's throughput is taken over the LS's serving only. be-ready-first
starts the BE first too, but holds it idle, once warmed up, until the LS is
ready: what differs from ls-first then is only which program's CUDA context
and memory came first.`,
		Example: `  carve bench serve --ls resnet50:graph --be densenet161 --rates 200,400
  carve bench serve --ls bert:graph,resnet50:eager --be resnet50-train --mechanisms mps-split,tide
  carve bench serve --ls llm:graph --be transformer-train --rates 50
  carve bench serve --mechanisms mps-split,tide --orders ls-first,be-first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Rates, err = parseFloats(rates); err != nil {
				return err
			}
			if o.Tide, err = parseTide(tide); err != nil {
				return err
			}
			return f.withEnv(cmd, o.Check, func(e *bench.Env) (*report.Result, error) { return bench.Serve(e, o) })
		},
	}
	c.Flags().StringSliceVar(&o.LS, "ls", []string{"resnet50:graph"}, "LS services, MODEL:MODE, MODEL one of "+strings.Join(bench.ServeLSModels, ", ")+"; MODE graph (CUDA graphs) or eager")
	c.Flags().StringSliceVar(&o.BE, "be", []string{"densenet161"}, "BE jobs: "+strings.Join(bench.ServeBEJobs, ", ")+" (densenet161 is inference, the others train)")
	c.Flags().IntVar(&o.BEBatch, "be-batch", 64, "images per BE step (sequences of 256 tokens for transformer-train)")
	c.Flags().StringSliceVar(&rates, "rates", []string{"200", "400"}, "LS requests per second")
	c.Flags().StringVar(&o.Pattern, "pattern", "poisson", "arrivals: poisson, onoff (100 ms at twice the rate, 100 ms idle), or step (Poisson at half the rate, 1.5 times it and half again, a third of --duration each: at half the LS's capacity, 25%, 75% and 25% of it; each phase's p99 and attainment reported)")
	c.Flags().DurationVar(&o.Duration, "duration", 8*time.Second, "how long each setup is measured")
	c.Flags().IntVar(&o.LSTPCs, "ls-tpcs", 16, "the LS's reserved TPCs under carve tide")
	c.Flags().IntSliceVar(&o.StaticSplits, "static-splits", []int{16, 33}, "the LS's TPCs under carve static, a point each (the BE gets the rest)")
	c.Flags().IntSliceVar(&o.MPSSplits, "mps-splits", []int{25, 50}, "the LS's MPS active-thread percentages (the BE gets the rest)")
	c.Flags().StringSliceVar(&tide, "tide", []string{"8:300us:0.05", "2:0s:0"}, "carve tide settings, "+tideForm+" (see carve run --inflight, --queue, --be-share, -n, --own, --be-floor, --slice, --slo, --mark (mark: the LS's requests, each an NVTX range \""+bench.ServeMark+"\" in every setup), --kernels (a path without a colon); with slo= the SLO controller runs in bench serve, so no carve daemon should run)")
	c.Flags().BoolVar(&o.Idle, "idle", true, "also measure each tide setting's BE beside an LS tenant that gets no request")
	c.Flags().StringSliceVar(&o.Mechanisms, "mechanisms", bench.ServeMechanisms, "what to compare: "+strings.Join(bench.ServeMechanisms, ", ")+
		"; and "+bench.ServeHeld+" (not by default: LS and BE under carve, the BE paused while the LS serves, its process there and its kernels not: the most any SLO could give the LS beside it)")
	c.Flags().StringSliceVar(&o.Orders, "orders", []string{"ls-first"}, "the start orders each setup is measured in: ls-first (the LS ready, its CUDA graph captured, before the BE starts), be-first (the LS starts while the BE runs; the BE is measured over the LS's serving only; named \"(BE first)\"), be-ready-first (the BE starts and warms up first, then waits, idle, while the LS starts; both go together; named \"(BE ready first)\")")
	c.Flags().StringVar(&o.Python, "python", "python3", "the Python with PyTorch and torchvision (and transformers for bert, llm and transformer-train)")
	f.add(c)
	return c
}

func parseFloats(xs []string) ([]float64, error) {
	out := make([]float64, len(xs))
	for i, x := range xs {
		v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return nil, fmt.Errorf("%q: want a number", x)
		}
		out[i] = v
	}
	return out, nil
}

// tideForm is how a --tide setting is written.
const tideForm = "INFLIGHT:QUEUE:SHARE[:LS_TPCS][:own][:floor=N][:slice=DUR][:slo=DUR|Nx][:mark][:kernels=FILE]"

func parseTide(xs []string) ([]bench.TideSetting, error) {
	var out []bench.TideSetting
	for _, x := range xs {
		f := strings.Split(x, ":")
		bad := fmt.Errorf("tide setting %q: want %s, e.g. 8:300us:0.05, 8:300us:1:50:own or 8:300us:1:floor=8", x, tideForm)
		if len(f) < 3 || len(f) > 9 {
			return nil, bad
		}
		n, err1 := strconv.Atoi(f[0])
		q, err2 := time.ParseDuration(f[1])
		v, err3 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, bad
		}
		t := bench.TideSetting{BE: ctl.Policy{Class: ctl.ClassBE, Inflight: n, Queue: q, Share: v}, LS: ctl.Policy{Class: ctl.ClassLS}}
		for i, opt := range f[3:] {
			var err error
			if fl, ok := strings.CutPrefix(opt, "floor="); ok && t.BE.Floor == 0 {
				if t.BE.Floor, err = strconv.Atoi(fl); err != nil || t.BE.Floor == 0 { // floor=0 names none
					return nil, bad
				}
			} else if sl, ok := strings.CutPrefix(opt, "slice="); ok && t.BE.Slice == 0 {
				if t.BE.Slice, err = time.ParseDuration(sl); err != nil || t.BE.Slice == 0 { // slice=0 cuts nothing
					return nil, bad
				}
			} else if so, ok := strings.CutPrefix(opt, "slo="); ok && t.LS.SLO == (ctl.SLO{}) {
				if t.LS.SLO, err = ctl.ParseSLO(so); err != nil || t.LS.SLO == (ctl.SLO{}) {
					return nil, bad
				}
			} else if k, ok := strings.CutPrefix(opt, "kernels="); ok && t.BE.Kernels == "" && k != "" {
				if t.BE.Kernels, err = filepath.Abs(k); err != nil {
					return nil, bad
				}
			} else if opt == "own" && !t.LS.Own {
				t.LS.Own = true
			} else if opt == "mark" && t.LS.Mark == "" {
				t.LS.Mark = bench.ServeMark
			} else if i == 0 {
				if t.LSTPCs, err = strconv.Atoi(opt); err != nil || t.LSTPCs < 1 {
					return nil, bad
				}
			} else {
				return nil, bad
			}
		}
		for _, p := range []*ctl.Policy{&t.BE, &t.LS} {
			if err := p.Normalize(ctl.FieldNames); err != nil {
				return nil, fmt.Errorf("tide setting %q: %w", x, err)
			}
		}
		out = append(out, t)
	}
	return out, nil
}
