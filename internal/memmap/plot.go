// PlotStructure: the interference between L2 classes, ordered by group, as
// a heat map.

package memmap

import (
	"fmt"
	"math"
	"sort"

	"github.com/carve-gpu/carve/internal/report"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// interferenceGrid is the interference matrix with the classes ordered by
// group, as log2 of the slowdown: row = hammered class, column = slowed.
type interferenceGrid struct {
	m     [][]float64
	order []int
}

func (g interferenceGrid) Dims() (c, r int)   { return len(g.order), len(g.order) }
func (g interferenceGrid) X(c int) float64    { return float64(c) }
func (g interferenceGrid) Y(r int) float64    { return float64(r) }
func (g interferenceGrid) Z(c, r int) float64 { return math.Log2(max(1, g.m[g.order[r]][g.order[c]])) }

// PlotStructure draws the interference between classes (ordered by group)
// as a heat map to base.png and base.svg.
func PlotStructure(s Structure, device, base string) error {
	k := len(s.Interference)
	if k == 0 {
		return fmt.Errorf("no classes to plot")
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s.Group[order[a]] < s.Group[order[b]] })
	p := plot.New()
	top := 0.0
	for _, row := range s.Interference {
		for _, x := range row {
			top = max(top, x)
		}
	}
	p.Title.Text = fmt.Sprintf("%s: %d L2 slices in %d DRAM groups\nslowdown of a slice's lines (x) while another's lines (y) are loaded from DRAM,\nlog scale from red (none) to white (%.1fx)", device, k, s.Groups, top)
	p.X.Label.Text = "slowed slice (ordered by group)"
	p.Y.Label.Text = "hammered slice"
	h := plotter.NewHeatMap(interferenceGrid{m: s.Interference, order: order}, palette.Heat(32, 1))
	p.Add(h)
	// group boundaries, where groups hold several slices
	for i := 1; i < k && s.Groups < k; i++ {
		if s.Group[order[i]] != s.Group[order[i-1]] {
			for _, xy := range []plotter.XYs{{{X: float64(i) - 0.5, Y: -0.5}, {X: float64(i) - 0.5, Y: float64(k) - 0.5}},
				{{X: -0.5, Y: float64(i) - 0.5}, {X: float64(k) - 0.5, Y: float64(i) - 0.5}}} {
				l, err := plotter.NewLine(xy)
				if err != nil {
					return err
				}
				l.Width = vg.Points(0.5)
				p.Add(l)
			}
		}
	}
	return report.SavePanels([]*plot.Plot{p}, 1, 9*vg.Inch, 9*vg.Inch, base)
}
