// Discovery: the live TPC bits and the SMs behind each found by launching
// a Prober's SM-recording kernel under single-bit masks, then the GPCs by
// launching thread-block clusters, which never span a GPC.

package topo

import (
	"errors"
	"fmt"
	"sort"
)

// Prober runs the SM-recording kernel. Run launches blocks blocks (grouped
// into thread-block clusters of cluster blocks when cluster > 0) with the
// given TPC-disable mask (nil: none) and returns the %smid each block ran on.
// A kernel that does not finish in time is an error, never a wait.
type Prober interface {
	SMCount() int
	Run(disable *Disable, blocks, cluster int) ([]int, error)
}

// ErrSMIDVirtualized means the SM ids seen do not match the device, as under MPS.
var ErrSMIDVirtualized = errors.New("SM ids seen do not cover the device's SMs: " +
	"discovery must run outside MPS, which virtualizes %smid")

// Layout is what discovery learns: the SMs behind each live bit and a GPC
// label per live bit (nil when clusters could not be launched).
type Layout struct {
	BitSMs map[int][]int
	GPCOf  map[int]int
}

// Options tune discovery; zero values pick the defaults.
type Options struct {
	Blocks      int // blocks per probe launch (default 4 per SM, one SM each)
	ClusterSize int // blocks per cluster for GPC grouping (default 8)
	GPCRounds   int // cluster launches at least (default 24)
	Progress    func(done, total int)
}

func (o Options) withDefaults(sms int) Options {
	if o.Blocks == 0 {
		o.Blocks = 4 * sms
	}
	if o.ClusterSize == 0 {
		o.ClusterSize = 8
	}
	if o.GPCRounds == 0 {
		o.GPCRounds = 24
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	return o
}

func seen(sms []int) map[int]bool {
	s := make(map[int]bool, len(sms))
	for _, v := range sms {
		s[v] = true
	}
	return s
}

// Discover finds the live TPC bits and their SMs, then the GPCs.
//
// Every probe enables at least one TPC already known to be live, so no
// probe can hang: first bits are disabled one at a time (all others stay
// enabled) until one whose SMs vanish is found, the anchor; then each other
// bit is enabled alone beside the anchor, and the SMs that appear beyond the
// anchor's are that bit's.
func Discover(p Prober, opt Options) (*Layout, error) {
	n := p.SMCount()
	opt = opt.withDefaults(n)
	total := MaskBits + opt.GPCRounds
	done := 0
	step := func() { done++; opt.Progress(done, total) }

	all, err := p.Run(nil, opt.Blocks, 0)
	if err != nil {
		return nil, fmt.Errorf("baseline launch: %w", err)
	}
	allSeen := seen(all)
	for sm := range allSeen {
		if sm < 0 || sm >= n {
			return nil, fmt.Errorf("%w (saw SM %d of %d)", ErrSMIDVirtualized, sm, n)
		}
	}
	if len(allSeen) != n {
		return nil, fmt.Errorf("%w (saw %d of %d SMs)", ErrSMIDVirtualized, len(allSeen), n)
	}

	anchor, anchorSMs := -1, []int(nil)
	for b := 0; b < MaskBits && anchor < 0; b++ {
		var m Disable
		m = m.Set(b)
		got, err := p.Run(&m, opt.Blocks, 0)
		if err != nil {
			return nil, fmt.Errorf("probe disabling bit %d: %w", b, err)
		}
		s := seen(got)
		for sm := range allSeen {
			if !s[sm] {
				anchorSMs = append(anchorSMs, sm)
			}
		}
		if len(anchorSMs) > 0 {
			anchor = b
		}
	}
	if anchor < 0 {
		return nil, errors.New("no mask bit changed where kernels ran: the driver ignored the TPC mask (unsupported GPU or descriptor version?)")
	}
	sort.Ints(anchorSMs)
	anchorSet := seen(anchorSMs)

	lay := &Layout{BitSMs: map[int][]int{anchor: anchorSMs}}
	owner := map[int]int{}
	for _, sm := range anchorSMs {
		owner[sm] = anchor
	}
	for b := 0; b < MaskBits; b++ {
		step()
		if b == anchor {
			continue
		}
		var en Enable
		en = en.Set(anchor).Set(b)
		dis := en.Disable()
		got, err := p.Run(&dis, opt.Blocks, 0)
		if err != nil {
			return nil, fmt.Errorf("probe enabling bits %d and %d: %w", anchor, b, err)
		}
		var extra []int
		for sm := range seen(got) {
			if anchorSet[sm] {
				continue
			}
			if o, dup := owner[sm]; dup {
				return nil, fmt.Errorf("SM %d ran under bit %d and bit %d: inconsistent probes", sm, o, b)
			}
			owner[sm] = b
			extra = append(extra, sm)
		}
		if len(extra) > 0 {
			sort.Ints(extra)
			lay.BitSMs[b] = extra
		}
	}
	if len(owner) != n {
		var missing []int
		for sm := 0; sm < n; sm++ {
			if _, ok := owner[sm]; !ok {
				missing = append(missing, sm)
			}
		}
		return nil, fmt.Errorf("SMs %v were never reached through a single mask bit", missing)
	}

	gpc, err := groupGPCs(p, opt, owner, step)
	if err != nil {
		return nil, err
	}
	lay.GPCOf = gpc
	return lay, nil
}

// groupGPCs launches thread-block clusters, which never span a GPC, and
// joins the TPCs whose SMs share a cluster. It keeps launching until the
// grouping has not changed for GPCRounds/3 launches (at least GPCRounds).
func groupGPCs(p Prober, opt Options, owner map[int]int, step func()) (map[int]int, error) {
	parent := map[int]int{}
	for _, b := range owner {
		parent[b] = b
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	groups := len(parent)
	blocks := opt.Blocks - opt.Blocks%opt.ClusterSize
	stable, maxRounds := 0, 4*opt.GPCRounds
	for round := 0; round < maxRounds; round++ {
		if round < opt.GPCRounds {
			step()
		}
		sms, err := p.Run(nil, blocks, opt.ClusterSize)
		if err != nil {
			if round == 0 {
				return nil, nil // no clusters here: GPCs stay unknown
			}
			return nil, fmt.Errorf("cluster launch: %w", err)
		}
		before := groups
		for c := 0; c+opt.ClusterSize <= len(sms); c += opt.ClusterSize {
			r0 := find(owner[sms[c]])
			for _, sm := range sms[c+1 : c+opt.ClusterSize] {
				if r := find(owner[sm]); r != r0 {
					parent[r] = r0
					groups--
				}
			}
		}
		if groups == before {
			stable++
		} else {
			stable = 0
		}
		if round+1 >= opt.GPCRounds && stable >= opt.GPCRounds/3 {
			break
		}
	}
	out := map[int]int{}
	for b := range parent {
		out[b] = find(b)
	}
	return out, nil
}
