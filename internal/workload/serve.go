// The Python programs of carve bench serve, embedded: the LS service
// (serve_ls.py) and the BE job (serve_be.py).

package workload

import _ "embed"

// ServeLS is the latency-sensitive service of carve bench serve, run as
// python3 -c; see its docstring for its flags and what it prints.
//
//go:embed serve_ls.py
var ServeLS string

// ServeBE is the best-effort job of carve bench serve, run as python3 -c.
//
//go:embed serve_be.py
var ServeBE string
