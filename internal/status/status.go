// Package status says what carve ls and the daemon show of the partitioned
// processes: one row per control block, live or ended after a GPU fault,
// with its TPCs named on the GPU's cached topology, and the faults grouped
// and attributed: clients of one MPS server that met a fault together are
// one group, and the kernel log's Xid report, where it can be read, names
// the process whose kernel faulted.
package status

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/partition"
	"github.com/carve-gpu/carve/internal/printable"
	"github.com/carve-gpu/carve/internal/topo"
	"github.com/carve-gpu/carve/internal/xid"
)

// Row is one partitioned process.
type Row struct {
	PID        int             `json:"pid"`
	Tenant     int             `json:"tenant"` // the pid carve run started; children share it
	Command    []string        `json:"command"`
	TPCs       string          `json:"tpcs"` // logical, or "mask:<hex>" when no topology is cached
	NumTPCs    int             `json:"num_tpcs"`
	SMs        int             `json:"sms"` // reported to the program (0: the whole GPU's)
	Launches   uint64          `json:"launches"`
	LastLaunch string          `json:"last_launch,omitempty"` // RFC 3339
	State      string          `json:"state"`
	Refused    uint64          `json:"refused_masks"`
	Applied    bool            `json:"current_mask_applied"`      // the last launch used the newest mask
	MPS        bool            `json:"mps"`                       // a client of carve's MPS daemon (in its fault domain)
	Class      string          `json:"class"`                     // "ls", "be" or ""
	Tide       *ctl.TideStatus `json:"tide,omitempty"`            // an LS or BE tenant's work
	Floor      string          `json:"floor,omitempty"`           // a BE tenant's floor: the TPCs it keeps to while LS work is in flight
	Periods    *Periods        `json:"busy_periods,omitempty"`    // an LS tenant's busy periods over its life
	Marked     *Marked         `json:"marked_requests,omitempty"` // an LS tenant's requests as its program marks them (--mark), over its life
	Fault      *Fault          `json:"fault,omitempty"`
	Memory     Memory          `json:"memory"`
	BW         *BW             `json:"bandwidth,omitempty"` // a tenant with a bandwidth share (--bw): its slot and its gate
	Kernels    *Kernels        `json:"kernels,omitempty"`   // a tenant with a kernel table (--kernels): its launches' DRAM bytes by it
	Ended      bool            `json:"ended,omitempty"`     // the process is gone (listed for its fault)
	Claim      string          `json:"claim,omitempty"`     // the Kubernetes claim (namespace/name) it runs in; its pid is the container's

	GPU string `json:"gpu,omitempty"` // the UUID of the GPU the partition is of ("": not recorded)
	// GPUs are its partitions on each of its GPUs, where it has them on
	// several: the fields above are those of its first
	GPUs []GPUPart `json:"gpus,omitempty"`
	// launches on another GPU, which ran on all its TPCs (allowed
	// unpartitioned), and the last such GPU
	OtherLaunches uint64 `json:"other_gpu_launches,omitempty"`
	OtherGPU      string `json:"other_gpu,omitempty"`
	// executable graphs launched after a move: instantiated anew on the
	// new mask, or kept on the one they were instantiated under
	GraphsRemade uint64 `json:"graphs_remade,omitempty"`
	GraphsKept   uint64 `json:"graphs_kept,omitempty"`

	// Unreadable is a block carve could not read, and skipped: a row of
	// its own, with no other field set
	Unreadable *ctl.Bad `json:"unreadable,omitempty"`
}

// GPUPart is a tenant's partition on one of its GPUs.
type GPUPart struct {
	GPU     string `json:"gpu"`
	TPCs    string `json:"tpcs"` // logical, or "mask:<hex>" when no topology is cached
	NumTPCs int    `json:"num_tpcs"`
	SMs     int    `json:"sms"` // reported to the program (0: the whole GPU's)
	Floor   string `json:"floor,omitempty"`
}

// part names a partition's TPCs and floor on its GPU's cached topology.
func part(p ctl.Part, allSMs bool) GPUPart {
	g := GPUPart{GPU: p.GPU, SMs: p.SMs}
	if allSMs {
		g.SMs = 0
	}
	if t, _ := topo.FindCachedGPU(p.GPU, p.Live); t != nil {
		set := partition.FromMask(t, p.Mask)
		g.TPCs, g.NumTPCs = set.String(), len(set)
		if f := partition.FromEnable(t, p.Floor); len(f) > 0 {
			g.Floor = f.String()
		}
	} else {
		g.TPCs = "mask:" + p.Mask.String()
		g.NumTPCs = p.Mask.Enable().And(p.Live).Count()
	}
	return g
}

// Memory is what a row says of its tenant's GPU memory, in bytes.
type Memory struct {
	Limit       uint64 `json:"limit"`       // the tenant's limit (0: none)
	Used        uint64 `json:"used"`        // what this process holds
	TenantUsed  uint64 `json:"tenant_used"` // what all the tenant's processes hold
	Peak        uint64 `json:"peak"`        // the most they held
	Refused     uint64 `json:"refused"`     // allocations refused at the limit
	LastRefused string `json:"last_refused,omitempty"`
}

// memory is what a block says of the memory of its process and, from
// account (the tenant's first block, or a claim's root), of its tenant's.
func memory(own, account ctl.Memory) Memory {
	m := Memory{Limit: own.Limit, Used: own.Used, TenantUsed: account.Total, Peak: account.Peak,
		Refused: max(own.Refused, account.Refused)}
	last := account.LastRefused
	if own.LastRefused.After(last) {
		last = own.LastRefused
	}
	if !last.IsZero() {
		m.LastRefused = last.UTC().Format(time.RFC3339Nano)
	}
	return m
}

// Fault is what a row says of its GPU fault.
type Fault struct {
	Code  int    `json:"code"`
	Name  string `json:"name"`
	Call  string `json:"call"`
	At    string `json:"at"`
	Cause string `json:"cause"` // "faulted", "beside" (ended with a fault of another) or "unknown"
	Xid   string `json:"xid,omitempty"`
}

// BW is a tenant's memory bandwidth share (ctl.Policy.BW): its slot of
// each epoch on its first GPU, and the time its launches waited for it.
type BW struct {
	Share        float64       `json:"share"`
	Strict       bool          `json:"strict"`
	Slot         time.Duration `json:"slot"` // its start in the epoch
	Len          time.Duration `json:"len"`
	Epoch        time.Duration `json:"epoch"`
	Held         time.Duration `json:"held"`
	HeldLaunches uint64        `json:"held_launches"`
	// Busy: its kernels' time on the GPU as the gate measured it, while it
	// gated (ungated alone: not measured)
	Busy time.Duration `json:"busy"`
}

// Kernels is a tenant's kernel table (ctl.Policy.Kernels), by its path,
// and what its shim counted by it.
type Kernels struct {
	Table string `json:"table"`
	ctl.KernelStatus
}

// KernelsText says what a tenant's launches moved by its kernel table:
// their DRAM bytes, the launches it had no entry for and, of a BE
// tenant, those it ran beside busy LS work as compute-bound.
func KernelsText(r Row) string {
	k := r.Kernels
	if k == nil {
		return ""
	}
	s := fmt.Sprintf("dram %.3g GB by its kernel table, %d launches unknown", float64(k.Bytes)/1e9, k.Unknown)
	if r.Class == "be" {
		s += fmt.Sprintf(", %d beside LS work", k.Beside)
	}
	return s
}

// ShareText is b's share, and "strict" after it where it is.
func (b BW) ShareText() string {
	if b.Strict {
		return fmt.Sprintf("%g strict", b.Share)
	}
	return fmt.Sprintf("%g", b.Share)
}

// BWText says what a tenant's bandwidth share is and has done: its share,
// strict or not, its slot, its kernels' time measured on the GPU and the
// time its launches waited for the slot.
func BWText(r Row) string {
	if r.BW == nil {
		return ""
	}
	b := r.BW
	return fmt.Sprintf("bw %s (%v at %v of %v), kernels %v, held %v (%d launches)", b.ShareText(), b.Len, b.Slot, b.Epoch,
		b.Busy.Round(time.Millisecond), b.Held.Round(time.Millisecond), b.HeldLaunches)
}

var stateNames = map[uint32]string{
	ctl.StateNew: "starting", ctl.StateHooked: "partitioned",
	ctl.StateUnhooked: "UNPARTITIONED", ctl.StateNoDriver: "no-driver",
}

func row(e ctl.Entry, ended bool) Row {
	r := Row{PID: e.PID, Tenant: e.Tenant, Command: e.Command, Launches: e.Launches, State: stateNames[e.State],
		Refused: e.Refused, Applied: e.AppliedGen == e.Gen, SMs: e.SMs, Ended: ended, MPS: e.Flags&ctl.FlagMPS != 0}
	if e.Flags&ctl.FlagAllSMs != 0 {
		r.SMs = 0
	}
	r.GPU, r.OtherLaunches, r.OtherGPU = e.GPU, e.OtherLaunches, e.OtherGPU
	r.GraphsRemade, r.GraphsKept = e.GraphsRemade, e.GraphsKept
	switch e.Class {
	case ctl.ClassLS, ctl.ClassBE:
		r.Class = ctl.ClassName(e.Class)
		ts := e.TideStatus
		r.Tide = &ts
		if e.Class == ctl.ClassLS {
			r.Periods = PeriodsOf(ts.Periods, ts.Alone, e.Tide.SLO, ts.SLOTarget)
			r.Marked = MarkedOf(e.Tide.Mark, ts, ts.Marked, e.Tide.SLO)
		}
	}
	if !e.LastLaunch.IsZero() {
		r.LastLaunch = e.LastLaunch.UTC().Format(time.RFC3339Nano)
	}
	r.Memory = memory(e.Memory, e.Memory)
	if e.BW.Share > 0 {
		r.BW = &BW{Share: e.BW.Share, Strict: e.BW.Strict, Slot: e.BWOff, Len: e.BW.Len, Epoch: e.BW.Epoch,
			Held: e.BWStatus.Held, HeldLaunches: e.BWStatus.HeldLaunches, Busy: e.BWStatus.Busy}
	}
	if e.Kernels != "" {
		r.Kernels = &Kernels{Table: e.Kernels, KernelStatus: e.KernelStatus}
	}
	if f := e.Fault; f.Code != 0 {
		r.Fault = &Fault{Code: int(f.Code), Name: f.Name(), Call: f.Call, At: f.At.UTC().Format(time.RFC3339Nano), Cause: "unknown"}
	}
	for _, p := range e.Parts() {
		r.GPUs = append(r.GPUs, part(p, e.Flags&ctl.FlagAllSMs != 0))
	}
	r.TPCs, r.NumTPCs, r.Floor = r.GPUs[0].TPCs, r.GPUs[0].NumTPCs, r.GPUs[0].Floor
	if len(r.GPUs) == 1 {
		r.GPUs = nil
	}
	return r
}

// Parts are a row's partitions on each of its GPUs.
func Parts(r Row) []GPUPart {
	if len(r.GPUs) > 0 {
		return r.GPUs
	}
	return []GPUPart{{GPU: r.GPU, TPCs: r.TPCs, NumTPCs: r.NumTPCs, SMs: r.SMs, Floor: r.Floor}}
}

// ShortGPU is a GPU's UUID as the tables show it: its first group
// ("GPU-72602ec6"), "-" where it is not known.
func ShortGPU(uuid string) string {
	if uuid == "" {
		return "-"
	}
	if len(uuid) > 12 {
		uuid = uuid[:12]
	}
	return printable.String(uuid)
}

// List returns the rows of the blocks in dir: live processes by pid, then
// those that ended after a fault, by the fault's time. Faults are
// attributed with the Xid reports events (nil: none could be read).
// Last come the blocks it could not read, a row each (Row.Unreadable).
func List(dir string, events []xid.Event) ([]Row, error) {
	l, err := ctl.Read(dir)
	if err != nil {
		return nil, err
	}
	live, ended := l.Live, l.Ended
	rows := make([]Row, 0, len(live)+len(ended))
	accounts := map[int]ctl.Memory{} // by tenant: its first block's
	for _, e := range live {
		if e.PID == e.Tenant {
			accounts[e.Tenant] = e.Memory
		}
	}
	for _, e := range live {
		r := row(e, false)
		if a, ok := accounts[e.Tenant]; ok {
			r.Memory = memory(e.Memory, a)
		}
		rows = append(rows, r)
	}
	for _, e := range ended {
		rows = append(rows, row(e, true))
	}
	for _, c := range l.Claims {
		if len(c.Procs) == 0 { // reserved, no process yet (or no longer)
			r := row(ctl.Entry{Snapshot: c.Root}, false)
			r.Claim, r.State, r.Command = c.Name(), "reserved", nil
			r.Memory.Used = c.Account.Total
			rows = append(rows, r)
		}
		for _, p := range c.Procs {
			r := row(p, false)
			r.Claim, r.Memory = c.Name(), memory(p.Memory, c.Account)
			rows = append(rows, r)
		}
	}
	for _, b := range l.Skipped {
		rows = append(rows, Row{Unreadable: &b})
	}
	Attribute(rows, events)
	return rows, nil
}

// window is how far apart a fault and its report, or the faults of one
// group, may be.
const window = 5 * time.Second

// Attribute says of each fault whether the process's own kernel faulted
// (an Xid report names it) or it ended beside one that did (another
// process's report came within the window).
func Attribute(rows []Row, events []xid.Event) {
	for i := range rows {
		f := rows[i].Fault
		if f == nil || events == nil {
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, f.At)
		if e, ok := xid.Near(events, rows[i].PID, at, window); ok {
			f.Cause, f.Xid = "faulted", fmt.Sprintf("Xid %d: %s", e.Xid, e.Message)
			continue
		}
		for _, e := range events {
			if e.PID != rows[i].PID && e.At.Sub(at) < window && at.Sub(e.At) < window {
				f.Cause = "beside"
				f.Xid = fmt.Sprintf("pid %d (%s) faulted: Xid %d", e.PID, e.Name, e.Xid)
				break
			}
		}
	}
}

// WriteTable prints rows as carve ls does, the faults below the live
// processes; unreadable is why the kernel log could not be read, if so.
func WriteTable(w io.Writer, rows []Row, now time.Time, unreadable error) {
	rows, skipped := Readable(rows)
	defer writeSkipped(w, skipped)
	if len(rows) == 0 {
		fmt.Fprintln(w, "no partitioned processes")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tCLASS\tGPU\tTPCS\tN\tSMS\tMEM\tCONTEXT\tLAUNCHES\tLAST LAUNCH\tSTATE\tTIDE\tCOMMAND")
	var faulted []Row
	for _, r := range rows {
		if r.Fault != nil {
			faulted = append(faulted, r)
		}
		if r.Ended {
			continue
		}
		last := "-"
		if t, err := time.Parse(time.RFC3339Nano, r.LastLaunch); err == nil {
			last = now.Sub(t).Round(time.Millisecond).String() + " ago"
		}
		state := r.State
		if r.Fault != nil {
			state = "FAULT " + r.Fault.Name
		} else if !r.Applied && r.Launches > 0 {
			state += " (new mask from next launch)"
		}
		state += Elsewhere(r) + Refused(r)
		sms := SMsText(r.SMs)
		pid, command := fmt.Sprint(r.PID), printable.CommandLine(r.Command, 50)
		if r.Claim != "" {
			command = "claim " + printable.String(r.Claim) + ": " + command
			if r.PID == 0 {
				pid, command = "-", "claim "+printable.String(r.Claim)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", pid, orDash(r.Class), ShortGPU(r.GPU), r.TPCs, r.NumTPCs, sms,
			MemText(r), context(r), r.Launches, last, state, TideText(r), command)
		for _, g := range MoreParts(r) {
			fmt.Fprintf(tw, "\t\t%s\t%s\t%d\t%s\t\t\t\t\t\t\t\n", ShortGPU(g.GPU), g.TPCs, g.NumTPCs, SMsText(g.SMs))
		}
	}
	tw.Flush()
	writeFaults(w, faulted, now, unreadable)
}

// Readable splits rows into those of blocks read and those of blocks
// that could not be (Row.Unreadable).
func Readable(rows []Row) (read, skipped []Row) {
	for _, r := range rows {
		if r.Unreadable != nil {
			skipped = append(skipped, r)
		} else {
			read = append(read, r)
		}
	}
	return read, skipped
}

// writeSkipped prints a line for each block that could not be read.
func writeSkipped(w io.Writer, skipped []Row) {
	for _, r := range skipped {
		fmt.Fprintf(w, "skipped %s (%s): %s\n", r.Unreadable.Path, r.Unreadable.Reason, r.Unreadable.Why)
	}
}

// MoreParts are a row's partitions on its GPUs but the first, each shown
// on a line of its own below the row.
func MoreParts(r Row) []GPUPart {
	if len(r.GPUs) < 2 {
		return nil
	}
	return r.GPUs[1:]
}

// SMsText is an SM count told to a program: "all" for the whole GPU's.
func SMsText(n int) string {
	if n == 0 {
		return "all"
	}
	return fmt.Sprint(n)
}

// Command is the row's command line, made printable and cut to width.
func Command(r Row, width int) string { return printable.CommandLine(r.Command, width) }

// Elsewhere says, after a row's state, how many of its launches were on
// another GPU than its partition's, and so ran on all that GPU's TPCs; ""
// if none.
func Elsewhere(r Row) string {
	if r.OtherLaunches == 0 {
		return ""
	}
	return fmt.Sprintf("; %d launches UNMASKED on %s", r.OtherLaunches, printable.String(r.OtherGPU))
}

// MemText is a row's MEM: what its tenant holds of the GPU's memory and
// its limit ("2.1G/12G"; "-" for no limit), or "-" for a tenant with
// neither.
func MemText(r Row) string {
	m := r.Memory
	if m.Limit == 0 && m.TenantUsed == 0 {
		return "-"
	}
	limit := "-"
	if m.Limit > 0 {
		limit = ctl.FormatBytes(m.Limit)
	}
	return ctl.FormatBytes(m.TenantUsed) + "/" + limit
}

// Refused says, after a row's state, that its tenant hit its memory limit:
// how many allocations were refused; "" if none.
func Refused(r Row) string {
	if r.Memory.Refused == 0 {
		return ""
	}
	return fmt.Sprintf("; MEMORY LIMIT hit, %d allocations refused", r.Memory.Refused)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TideText says what an LS or BE tenant's work has been (and, after it,
// BWText and KernelsText where they say anything): an LS tenant's
// time with work in flight, its requests (idle to busy) and its busy
// periods' p50 and p99, all and alone, a BE tenant's
// time held back and its launches held, let through and in flight,
// those cut into pieces (--slice), and whether the SLO controller pauses
// it now (ctl.Handle.Pause).
func TideText(r Row) string {
	bw := BWText(r)
	if k := KernelsText(r); k != "" && bw != "" {
		bw += "; " + k
	} else if k != "" {
		bw = k
	}
	if r.Tide == nil {
		return cmp.Or(bw, "-")
	}
	if bw != "" {
		bw = "; " + bw
	}
	return tideText(r) + bw
}

func tideText(r Row) string {
	t := r.Tide
	if t.State == ctl.TideOff {
		return "off (no node block)"
	}
	if r.Class == "ls" {
		s := fmt.Sprintf("busy %v over %d requests, %s", t.Busy.Round(time.Millisecond), t.Requests, r.Periods.Text())
		if r.Marked != nil {
			s += "; " + r.Marked.Text()
		}
		return s
	}
	floor := ""
	if r.Floor != "" {
		floor = " on " + r.Floor
	}
	s := fmt.Sprintf("held %v (%d launches), %d while LS busy%s, %d in flight, kernels %v", t.Held.Round(time.Millisecond),
		t.HeldLaunches, t.NarrowLaunch, floor, t.Inflight, t.Kernel)
	if t.Sliced > 0 {
		s += fmt.Sprintf(", %d cut into %d pieces", t.Sliced, t.SlicePieces)
	}
	if t.Paused() {
		s += "; paused by the SLO controller (" + PauseWhy + ")"
	}
	return s
}

// PauseWhy is why the SLO controller pauses a BE tenant (ctl.Handle.Pause),
// as carve ls and the daemon's carve_be_paused say it.
const PauseWhy = "calibrating an LS tenant alone, or holding one over its goal with the BE at the bottom of its share"

func context(r Row) string {
	if r.MPS {
		return "mps"
	}
	return "own"
}

// writeFaults lists the processes that met a GPU fault, in the order they
// saw it, the clients of MPS that met one within the window of each other
// as one group: under MPS one client's fault ends the work of every client,
// and MPS's own log names whichever client it noticed first.
func writeFaults(w io.Writer, rows []Row, now time.Time, unreadable error) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nGPU faults:")
	closeGroup := func(n int) {
		if n > 1 {
			fmt.Fprintf(w, "  these %d MPS clients met the fault together: a fault in any of them ends them all\n", n)
		}
	}
	var first time.Time
	group := 0
	for i, r := range rows {
		at, _ := time.Parse(time.RFC3339Nano, r.Fault.At)
		if i == 0 || !r.MPS || !rows[i-1].MPS || at.Sub(first) >= window {
			closeGroup(group)
			first, group = at, 0
		}
		group++
		state := "still running"
		if r.Ended {
			state = "ended"
		}
		cause := ""
		switch r.Fault.Cause {
		case "faulted":
			cause = "; its kernel faulted (" + printable.String(r.Fault.Xid) + ")"
		case "beside":
			cause = "; ended beside another's fault: " + printable.String(r.Fault.Xid)
		}
		fmt.Fprintf(w, "  pid %d (%s, TPCs %s, %s context): %s at %s, %s ago; %s%s\n", r.PID, printable.CommandLine(r.Command, 40), r.TPCs,
			context(r), printable.String(r.Fault.Name), printable.String(r.Fault.Call), now.Sub(at).Round(time.Second), state, cause)
	}
	closeGroup(group)
	if unreadable != nil {
		fmt.Fprintf(w, "  (%v)\n", unreadable)
	}
	fmt.Fprintln(w, "  (carve run --no-mps keeps a program that must not be disturbed out of MPS's fault domain)")
}
