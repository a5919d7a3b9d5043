// Package bench holds carve's experiments, one file each: overhead,
// enforcement, granularity, isolation, colour, readers and the latency
// model's co-run evaluation; serve, LS services beside BE jobs, has three
// (serve.go, serve_setups.go and serve_table.go). Each takes its options,
// runs the programs of internal/workload in worker processes (or in this
// one, where a mechanism allows only that) under each mechanism it compares
// (no partitioning, MPS percentages, carve, green contexts), and returns a
// result; each draws its own table and plots (render.go), so that a saved
// result can be shown again without a GPU.
//
// The command line only parses flags and prints; what an experiment does is
// here, callable from a test or another program.
package bench
