// Kernels of carve memmap: timing probes of the L2 and DRAM from user space.

__device__ static unsigned int ld_cg(const unsigned int *p)
{
	unsigned int v;
	asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

// chunk_latency: every block (one thread) records the SM it runs on in
// smids[blockIdx.x], then for each chunk c of the pool (chunk bytes apart,
// the pool filled with zeros) loads the chunk's first word once (so that
// it is in the L2) and times reps dependent loads of it that skip the L1
// (ld.global.cg): out[blockIdx.x * chunks + c] is the mean latency of one
// L2 hit in cycles, as seen from that SM.
extern "C" __global__ void chunk_latency(const unsigned int *pool, unsigned long long chunks, unsigned int chunk, int reps,
					 unsigned int *out, unsigned int *smids)
{
	if (threadIdx.x != 0)
		return;
	unsigned int smid;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	smids[blockIdx.x] = smid;
	for (unsigned long long c = 0; c < chunks; c++) {
		const unsigned int *p = pool + c * (chunk / 4);
		unsigned int v = ld_cg(p);
		long long t0 = clock64();
		for (int r = 0; r < reps; r++)
			v = ld_cg(p + v); // v is 0: each load waits for the one before
		long long t1 = clock64();
		out[blockIdx.x * chunks + c] = (unsigned int)((t1 - t0) / reps) + v;
	}
}

// chase: one thread follows next[] (word indices) from 0 for steps loads
// that skip the L1, and writes the mean cycles per load to out[0] and the
// index it ended on to out[1] (so that the chase cannot be skipped).
extern "C" __global__ void chase(const unsigned int *next, unsigned long long steps, unsigned int *out)
{
	unsigned int i = 0;
	for (int w = 0; w < 64; w++) // warm the first lines (the TLB too)
		i = ld_cg(next + i);
	i = 0;
	long long t0 = clock64();
	for (unsigned long long s = 0; s < steps; s++)
		i = ld_cg(next + i);
	long long t1 = clock64();
	out[0] = (unsigned int)((t1 - t0) / (long long)steps);
	out[1] = i;
}
