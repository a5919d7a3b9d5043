// Package workload holds the GPU programs carve measures with, each with
// the CPU reference it is checked against: the GEMM, the compute- and
// memory-heavy competitors, FGPU's isolation suite, the latency model's
// prediction suite, the launch-stamping kernel, and a PyTorch matmul. A
// Session loads carve's kernels in a context (the primary one, or a green
// context) and times launches, confined to TPCs by carve's own hook where a
// mask is given.
//
// It runs programs; it does not compare mechanisms. The experiments that do
// are in internal/bench, which starts these programs in worker processes.
package workload
