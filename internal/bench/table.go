package bench

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints r as the table its benchmark command prints, so that a
// saved result can be read again without a GPU.
func WriteTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s on %s, driver %s, %s\n", r.Benchmark, r.Device, r.Driver, r.Date)
	switch r.Benchmark {
	case "granularity":
		granularityTable(tw, r)
	case "enforcement", "colour":
		enforcementTable(tw, r)
	case "overhead":
		overheadTable(tw, r)
	case "isolation":
		isolationTable(tw, r)
	case "readers":
		readersTable(tw, r)
	default:
		return fmt.Errorf("no table for benchmark %q", r.Benchmark)
	}
	return tw.Flush()
}

func granularityTable(tw io.Writer, r *Result) {
	fmt.Fprintln(tw, "TPCS\tSMS\tMEDIAN MS\tMIN MS\tP99 MS\tx ALL")
	for _, s := range r.Series {
		if !s.Measured || len(s.Points) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\n", s.Mechanism)
		all := s.Points[len(s.Points)-1].Stats.P50
		for _, p := range s.Points {
			tpcs := "-" // green contexts give SMs, not TPCs
			if p.TPCs > 0 {
				tpcs = fmt.Sprint(p.TPCs)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.2f\n", tpcs, p.SMs, p.Stats.P50, p.Stats.Min, p.Stats.P99, p.Stats.P50/all)
		}
	}
}

func enforcementTable(tw io.Writer, r *Result) {
	refs, _ := r.Params["scaled_alone_ms"].(map[string]any)
	fmt.Fprintln(tw, "VICTIM\tSETUP\tMIN\tP50\tP99\tMAX\tP99 VS REFERENCE")
	for _, s := range r.Series {
		st := s.Points[0].Stats
		vs := "-"
		if ref, ok := refs[s.Victim].(float64); ok {
			vs = fmt.Sprintf("%+.1f%%", 100*(st.P99/ref-1))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", s.Victim, s.Mechanism, st.Min, st.P50, st.P99, st.Max, vs)
	}
	if share, ok := r.Params["share"]; ok {
		fmt.Fprintf(tw, "reference: the victim's median alone on the whole GPU / %v; green contexts partition one process only\n", share)
	}
}

func overheadTable(tw io.Writer, r *Result) {
	if len(r.Series) == 0 {
		return
	}
	none := r.Series[0]
	for k, p := range none.Points {
		fmt.Fprintf(tw, "%s (%s)\nMECHANISM\tN\tMIN\tP50\tP99\tMAX\tMEAN\tP50 VS %s\tMEAN VS %[3]s\n",
			p.Label, cmp.Or(p.Unit, "ms"), none.Mechanism)
		for _, s := range r.Series {
			st, base := s.Points[k].Stats, p.Stats
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%+.1f%%\t%+.1f%%\n", s.Mechanism, st.N, st.Min, st.P50, st.P99, st.Max, st.Mean,
				100*(st.P50/base.P50-1), 100*(st.Mean/base.Mean-1))
		}
	}
}

func isolationTable(tw io.Writer, r *Result) {
	fmt.Fprint(tw, "MEAN MS\tINTERFERER")
	for _, app := range SuiteApps {
		fmt.Fprintf(tw, "\t%s", app)
	}
	fmt.Fprintln(tw)
	for _, s := range r.Series {
		fmt.Fprintf(tw, "%s\t%s", s.Mechanism, cmp.Or(s.Competitor, "-"))
		for _, p := range s.Points {
			fmt.Fprintf(tw, "\t%.3f", p.Stats.Mean)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "\nVARIATION\t")
	for _, app := range SuiteApps {
		fmt.Fprintf(tw, "\t%s", app)
	}
	fmt.Fprint(tw, "\tAVG\tMAX")
	for _, c := range Interferers {
		fmt.Fprintf(tw, "\tAVG BESIDE %s", c)
	}
	fmt.Fprintln(tw)
	for _, row := range Variations(r) {
		fmt.Fprintf(tw, "%s\t", row.Mechanism)
		for _, app := range SuiteApps {
			fmt.Fprintf(tw, "\t%.1f%%", 100*row.PerApp[app])
		}
		fmt.Fprintf(tw, "\t%.1f%%\t%.1f%%", 100*row.Avg, 100*row.Max)
		for _, c := range Interferers {
			fmt.Fprintf(tw, "\t%.1f%%", 100*row.ByInterferer[c])
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "variation (FGPU): max over interferers of mean time beside it / mean time with the other partition idle - 1")
}
