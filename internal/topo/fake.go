// Fake, a Prober that plays a recorded topology back, so that discovery
// runs without a GPU.

package topo

import (
	"errors"
	"math/rand/v2"
)

// Fake is a Prober that plays a recorded topology back: blocks land on the
// SMs the mask enables, clusters on distinct SMs of one GPC, one block per
// SM at a time. A mask enabling no live TPC is an error (on a GPU it would
// hang), so tests see if discovery ever asks for one.
type Fake struct {
	Top     *Topology
	Rand    *rand.Rand
	Virtual bool // report SM ids as MPS does: renumbered from 0, only half of them
	Runs    int
}

// ErrWouldHang is what Fake returns for a mask enabling no live TPC.
var ErrWouldHang = errors.New("mask enables no live TPC: the kernel would hang")

// SMCount implements Prober.
func (f *Fake) SMCount() int { return f.Top.SMCount }

// Run implements Prober.
func (f *Fake) Run(disable *Disable, blocks, cluster int) ([]int, error) {
	f.Runs++
	var on []TPC
	for _, p := range f.Top.TPCs {
		if disable == nil || !disable.Has(p.Bit) {
			on = append(on, p)
		}
	}
	if len(on) == 0 {
		return nil, ErrWouldHang
	}
	out := make([]int, 0, blocks)
	if cluster <= 0 {
		var sms []int
		for _, p := range on {
			sms = append(sms, p.SMs...)
		}
		for len(out) < blocks {
			for _, i := range f.Rand.Perm(len(sms)) {
				out = append(out, sms[i])
			}
		}
		out = out[:blocks]
	} else {
		byGPC := map[int][]int{}
		for _, p := range on {
			byGPC[p.GPC] = append(byGPC[p.GPC], p.SMs...)
		}
		var fit [][]int
		for _, sms := range byGPC {
			if len(sms) >= cluster {
				fit = append(fit, sms)
			}
		}
		if len(fit) == 0 {
			return nil, ErrWouldHang
		}
		for len(out)+cluster <= blocks {
			sms := fit[f.Rand.IntN(len(fit))]
			for _, i := range f.Rand.Perm(len(sms))[:cluster] {
				out = append(out, sms[i])
			}
		}
	}
	if f.Virtual {
		for i := range out {
			out[i] %= f.Top.SMCount / 2
		}
	}
	return out, nil
}
