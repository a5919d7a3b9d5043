// Package topo describes a GPU as carve partitions it: which TPC mask bits
// are live, which SMs sit behind each, how TPCs group into GPCs, and the
// logical indexes users name (0..N-1, GPC by GPC). It holds the discovery
// algorithm over a Prober (played back by Fake in tests) and the cache of
// discovered topologies. It loads no driver: internal/discover probes a real
// GPU with it.
package topo

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// TPC is one live TPC.
type TPC struct {
	Index int   `json:"index"` // logical index, what users name
	Bit   int   `json:"bit"`   // bit in the hardware mask
	GPC   int   `json:"gpc"`   // logical GPC index
	SMs   []int `json:"sms"`   // %smid values of its SMs
}

// GPC is a group of TPCs that a thread-block cluster can span.
type GPC struct {
	Index int   `json:"index"`
	TPCs  []int `json:"tpcs"` // logical TPC indexes, ascending
}

// Topology is what discovery found on one GPU.
type Topology struct {
	Device       string   `json:"device"`
	UUID         string   `json:"uuid"`
	Driver       string   `json:"driver"`       // kernel module version, e.g. 580.159.04
	CUDAVersion  int      `json:"cuda_version"` // driver API version, e.g. 13000
	Compute      string   `json:"compute_capability"`
	SMCount      int      `json:"sm_count"`
	L2Bytes      int      `json:"l2_bytes"`
	MemoryBytes  uint64   `json:"memory_bytes"` // the GPU's memory (cuDeviceTotalMem); 0: not known (a cache of an older carve)
	TPCs         []TPC    `json:"tpcs"`
	GPCs         []GPC    `json:"gpcs"`
	GPCsKnown    bool     `json:"gpcs_known"` // false where clusters could not be launched
	DiscoveryMS  float64  `json:"discovery_ms"`
	DiscoveredAt string   `json:"discovered_at"`
	Notes        []string `json:"notes,omitempty"`
}

// Live is the GPU's live TPC bits.
func (t *Topology) Live() Enable {
	var m Enable
	for _, p := range t.TPCs {
		m = m.Set(p.Bit)
	}
	return m
}

// Validate checks the invariants every use of a topology relies on.
func (t *Topology) Validate() error {
	if len(t.TPCs) == 0 {
		return fmt.Errorf("topology of %s lists no live TPC", t.UUID)
	}
	seenBit := map[int]bool{}
	seenSM := map[int]bool{}
	for i, p := range t.TPCs {
		if p.Index != i {
			return fmt.Errorf("TPC %d has index %d", i, p.Index)
		}
		if p.Bit < 0 || p.Bit >= MaskBits || seenBit[p.Bit] {
			return fmt.Errorf("TPC %d: bad or repeated mask bit %d", i, p.Bit)
		}
		seenBit[p.Bit] = true
		if p.GPC < 0 || p.GPC >= len(t.GPCs) {
			return fmt.Errorf("TPC %d: GPC %d out of range", i, p.GPC)
		}
		for _, s := range p.SMs {
			if seenSM[s] {
				return fmt.Errorf("SM %d belongs to two TPCs", s)
			}
			seenSM[s] = true
		}
	}
	n := 0
	for g, gpc := range t.GPCs {
		if gpc.Index != g || len(gpc.TPCs) == 0 {
			return fmt.Errorf("GPC %d is empty or misnumbered", g)
		}
		for _, i := range gpc.TPCs {
			if i < 0 || i >= len(t.TPCs) || t.TPCs[i].GPC != g {
				return fmt.Errorf("GPC %d lists TPC %d that is not in it", g, i)
			}
		}
		n += len(gpc.TPCs)
	}
	if n != len(t.TPCs) {
		return fmt.Errorf("GPCs hold %d TPCs, topology has %d", n, len(t.TPCs))
	}
	if t.SMCount > 0 && len(seenSM) != t.SMCount {
		return fmt.Errorf("TPCs cover %d SMs, device has %d", len(seenSM), t.SMCount)
	}
	return nil
}

// Parse reads a topology from JSON and validates it.
func Parse(b []byte) (*Topology, error) {
	var t Topology
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return &t, nil
}

// Build orders discovered TPCs into logical indexes. bitSMs maps each live
// bit to its SMs; gpcOf maps each live bit to a GPC label (any integers).
// GPCs are ordered by their lowest bit, TPCs within a GPC by bit.
func Build(bitSMs map[int][]int, gpcOf map[int]int) ([]TPC, []GPC) {
	groups := map[int][]int{}
	for b := range bitSMs {
		groups[gpcOf[b]] = append(groups[gpcOf[b]], b)
	}
	var order [][]int
	for _, g := range groups {
		sort.Ints(g)
		order = append(order, g)
	}
	sort.Slice(order, func(i, j int) bool { return order[i][0] < order[j][0] })
	var tpcs []TPC
	var gpcs []GPC
	for gi, g := range order {
		gpc := GPC{Index: gi}
		for _, b := range g {
			sms := append([]int(nil), bitSMs[b]...)
			sort.Ints(sms)
			gpc.TPCs = append(gpc.TPCs, len(tpcs))
			tpcs = append(tpcs, TPC{Index: len(tpcs), Bit: b, GPC: gi, SMs: sms})
		}
		gpcs = append(gpcs, gpc)
	}
	return tpcs, gpcs
}

// Summary is a short human description, e.g. "66 TPCs in 8 GPCs (4-9 each)".
func (t *Topology) Summary() string {
	lo, hi := 1<<30, 0
	for _, g := range t.GPCs {
		lo, hi = min(lo, len(g.TPCs)), max(hi, len(g.TPCs))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d TPCs in %d GPCs", len(t.TPCs), len(t.GPCs))
	if len(t.GPCs) > 0 {
		if lo == hi {
			fmt.Fprintf(&b, " (%d each)", lo)
		} else {
			fmt.Fprintf(&b, " (%d-%d each)", lo, hi)
		}
	}
	return b.String()
}

// Place orders what discovery found into t's logical TPCs and GPCs, with a
// note where GPCs could not be seen.
func (t *Topology) Place(lay *Layout) {
	t.TPCs, t.GPCs = Build(lay.BitSMs, lay.GPCOf)
	t.GPCsKnown = lay.GPCOf != nil
	if !t.GPCsKnown {
		t.Notes = append(t.Notes, "thread-block clusters could not be launched: GPC grouping unknown, all TPCs listed in one group")
	} else if lone := loneTPCs(t); len(lone) > 0 && len(lone) < len(t.TPCs) {
		t.Notes = append(t.Notes, fmt.Sprintf("TPCs %v never shared a thread-block cluster with another TPC: each is listed as a GPC of its own", lone))
	}
}

// loneTPCs lists the TPCs that form a GPC by themselves.
func loneTPCs(t *Topology) []int {
	var out []int
	for _, g := range t.GPCs {
		if len(g.TPCs) == 1 {
			out = append(out, g.TPCs[0])
		}
	}
	return out
}
