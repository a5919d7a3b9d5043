// carve profile: its options, the suite kernels (or a program) profiled
// alone on GPC-packed partitions of each TPC count, and the table of
// profiles.

package profile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/discover"
	"github.com/carve-gpu/carve/internal/model"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/preload"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/workload"
)

// Options are carve profile's flags.
type Options struct {
	Kernels  []string // of the prediction suite; all of it when empty and Program is nil
	Program  []string // a whole program to profile instead, with its profile's Name
	Name     string
	Table    string // with Program: write its kernel table here instead (MeasureKernels)
	TPCs     string // "all" or a list of counts
	Reps     int
	Device   int
	NCU      string // "auto", "off" or ncu's path
	Progress func(done, total int)
	Note     func(string) // what the user should know, such as ncu missing
}

// Check rejects options that cannot run, before the GPU is asked.
func (o *Options) Check() error {
	if o.Reps < 1 {
		return errors.New("--reps: want at least 1")
	}
	if o.Table != "" && o.Program == nil {
		return errors.New("--table: name the program after --")
	}
	if o.Program != nil {
		if len(o.Program) == 0 {
			return errors.New("nothing after --: name the program to profile")
		}
		if len(o.Kernels) > 0 {
			return errors.New("name suite kernels or a program after --, not both")
		}
		if o.Table != "" {
			if o.NCU == "off" {
				return errors.New("--table: a kernel table is Nsight Compute's measurement: --ncu off makes none")
			}
			return nil
		}
		if o.Name == "" || strings.ContainsAny(o.Name, "/ ") {
			return fmt.Errorf("--name %q: give the program's profile a file name", o.Name)
		}
	} else if len(o.Kernels) == 0 {
		o.Kernels = workload.PredictKernels
	}
	for _, k := range o.Kernels {
		if !slices.Contains(workload.PredictKernels, k) {
			return fmt.Errorf("unknown kernel %q: want one of %s", k, strings.Join(workload.PredictKernels, ", "))
		}
	}
	_, err := partition.ParseCounts(o.TPCs, topo.MaskBits)
	return err
}

// Run profiles the suite kernels (each checked against its CPU reference
// first) or the program, alone on GPC-packed partitions of each TPC count,
// with Nsight Compute's counters where ncu is found.
func Run(o Options) ([]*model.Profile, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	if o.Note == nil {
		o.Note = func(string) {}
	}
	t, _, err := discover.Topology(o.Device, false)
	if err != nil {
		return nil, err
	}
	tpcs, err := partition.ParseCounts(o.TPCs, len(t.TPCs))
	if err != nil {
		return nil, err
	}
	ncu := o.NCU
	switch ncu {
	case "off":
		ncu = ""
	case "auto":
		if ncu, err = FindNCU(); err != nil {
			o.Note(err.Error())
			ncu = ""
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bw, err := NominalBW(o.Device)
	if err != nil {
		return nil, err
	}
	newProfile := func(name string) *model.Profile {
		return &model.Profile{Kernel: name, Device: t.Device, UUID: t.UUID, Driver: t.Driver,
			Date: time.Now().UTC().Format(time.RFC3339), SMs: t.SMCount, TPCs: len(t.TPCs), Reps: o.Reps, NominalBW: bw}
	}
	step, total := 0, len(o.Kernels)*len(tpcs)
	tick := func() { step++; o.Progress(step, total) }
	if o.Program != nil {
		total = len(tpcs)
		p := newProfile(o.Name)
		p.Program = o.Program
		shim, err := preload.Find("")
		if err != nil {
			return nil, err
		}
		prefix := func(set partition.Set) []string {
			return []string{exe, "run", "-q", "--shim", shim, "--device", strconv.Itoa(o.Device), "-t", set.String(), "--"}
		}
		if p.Sizes, err = ProgramTimes(prefix, o.Program, t, tpcs, o.Reps, tick); err != nil {
			return nil, err
		}
		if ncu != "" {
			if p.Counters, err = Count(ncu, "", o.Program...); err != nil {
				return nil, fmt.Errorf("counting %s: %w", o.Name, err)
			}
			p.Counters.Note = "summed over every kernel the program launched"
		}
		return []*model.Profile{p}, nil
	}
	s, err := workload.Open(o.Device)
	if err != nil {
		return nil, err
	}
	var out []*model.Profile
	for _, k := range o.Kernels {
		if err := workload.CheckApp(s, k); err != nil {
			return nil, err
		}
		app, err := workload.NewApp(s, k)
		if err != nil {
			return nil, err
		}
		p := newProfile(k)
		if p.Sizes, err = Times(app, t, tpcs, o.Reps, tick); err != nil {
			return nil, err
		}
		if ncu != "" {
			// ncu runs a process of its own, without carve's hook.
			if p.Counters, err = Count(ncu, app.Kernel(), exe, "bench", "__kernel", "--name", k, fmt.Sprintf("--device=%d", o.Device)); err != nil {
				return nil, fmt.Errorf("counting %s: %w", k, err)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// RunTable measures the program's kernel table with Nsight Compute and
// writes it to o.Table.
func RunTable(o Options) (*ctl.KernelTable, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Table == "" {
		return nil, errors.New("no --table to write")
	}
	ncu := o.NCU
	if ncu == "auto" {
		var err error
		if ncu, err = FindNCU(); err != nil {
			return nil, err
		}
	}
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	dev, err := cuda.GetDevice(o.Device)
	if err != nil {
		return nil, err
	}
	gpu, err := dev.Name()
	if err != nil {
		return nil, err
	}
	t, err := MeasureKernels(ncu, gpu, o.Program)
	if err != nil {
		return nil, err
	}
	return t, t.Save(o.Table)
}

// WriteTable prints one line per profile: its time on the fewest and the
// most TPCs profiled, and its counters.
func WriteTable(w io.Writer, profiles []*model.Profile) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KERNEL\tMS ON FEWEST TPCS\tMS ON MOST\tSPEEDUP\tDRAM GB/S\tL2 REQUESTS\tINSTRUCTIONS")
	for _, p := range profiles {
		first, last := p.Sizes[0], p.Sizes[len(p.Sizes)-1]
		fmt.Fprintf(tw, "%s\t%.3f (%d TPCs)\t%.3f (%d TPCs)\t%.1fx", p.Kernel, first.Stats.P50, first.TPCs, last.Stats.P50, last.TPCs, first.Stats.P50/last.Stats.P50)
		if c := p.Counters; c != nil {
			fmt.Fprintf(tw, "\t%.0f\t%.3g\t%.3g\n", c.DRAMBytes/c.DurationNS, c.L2Requests, c.Instructions)
		} else {
			fmt.Fprintln(tw, "\t-\t-\t-")
		}
	}
	return tw.Flush()
}
