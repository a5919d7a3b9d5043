// Package colour hands out memory of one colour from a pool whose lines
// carve memmap has labelled (by L2 partition, or by the half of the L2
// slices a line's slice is in): a tenant that only gets lines of its
// colour never shares them with a tenant of the other colour. On the H100
// colours change every 128 or 256 bytes, so a coloured array is a table of
// line indices that its kernels translate through (element i lives in line
// table[i / elements per line]).
package colour

import "fmt"

// Pool is a labelled pool: line l of LineBytes bytes has colour labels[l]
// (-1: unknown, never handed out).
type Pool struct {
	LineBytes int
	free      map[int][]uint32 // by colour, in address order
}

// New makes a pool of the labelled lines.
func New(labels []int, lineBytes int) *Pool {
	p := &Pool{LineBytes: lineBytes, free: map[int][]uint32{}}
	for l, c := range labels {
		if c >= 0 {
			p.free[c] = append(p.free[c], uint32(l))
		}
	}
	return p
}

// Free is how many bytes of colour c are left.
func (p *Pool) Free(c int) int { return len(p.free[c]) * p.LineBytes }

// Take hands out bytes (rounded up to whole lines) of colour c as the
// table of its lines, lowest addresses first.
func (p *Pool) Take(c, bytes int) ([]uint32, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("%d bytes: want a positive size", bytes)
	}
	n := (bytes + p.LineBytes - 1) / p.LineBytes
	if n > len(p.free[c]) {
		return nil, fmt.Errorf("%d bytes of colour %d asked for, %d left in the pool", bytes, c, p.Free(c))
	}
	t := p.free[c][:n:n]
	p.free[c] = p.free[c][n:]
	return t, nil
}
