// Kernels of carve memmap: timing probes of the L2 and DRAM from user space.

__device__ static unsigned int ld_cg(const unsigned int *p)
{
	unsigned int v;
	asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

// clock_after reads the cycle counter once v has arrived: the volatile
// store of v cannot issue before it, and the clock is read after the store.
__device__ static long long clock_after(unsigned int v)
{
	__shared__ volatile unsigned int sink;
	sink = v;
	return clock64();
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
		long long t1 = clock_after(v);
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
	long long t1 = clock_after(i);
	out[0] = (unsigned int)((t1 - t0) / (long long)steps);
	out[1] = i;
}

// slice_latency: block b (one thread) times the lines of its slice of the
// pool (lines of line bytes, the slices in block order): out[l] is the mean
// of reps dependent L2 hits on line l after one load that brings it in.
extern "C" __global__ void slice_latency(const unsigned int *pool, unsigned long long lines, unsigned int line, int reps,
					 unsigned int *out)
{
	if (threadIdx.x != 0)
		return;
	unsigned long long per = (lines + gridDim.x - 1) / gridDim.x;
	unsigned long long first = blockIdx.x * per, last = min(lines, first + per);
	for (unsigned long long l = first; l < last; l++) {
		const unsigned int *p = pool + l * (line / 4);
		unsigned int v = ld_cg(p);
		long long t0 = clock64();
		for (int r = 0; r < reps; r++)
			v = ld_cg(p + v);
		long long t1 = clock_after(v);
		out[l] = (unsigned int)((t1 - t0) / reps) + v;
	}
}

// Element i of an array in coloured memory lives in the 128-byte line
// tab[i / 32] of the pool; a null table means a plain array.
__device__ static size_t at(const unsigned int *tab, unsigned long long i)
{
	return tab ? (size_t)tab[i >> 5] * 32 + (i & 31) : (size_t)i;
}

// vadd_lines: c = a + b over n floats, loops times, each array plain or
// in coloured memory (a, b, c then all point at the pool and the tables
// say where each line is). One warp's 32 floats are one line: the table
// costs one extra load per line, from a small array.
extern "C" __global__ void vadd_lines(const float *a, const float *b, float *c, const unsigned int *ta,
				      const unsigned int *tb, const unsigned int *tc, unsigned long long n, int loops)
{
	for (int l = 0; l < loops; l++)
		for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
		     i += (unsigned long long)gridDim.x * blockDim.x)
			c[at(tc, i)] = __fadd_rn(a[at(ta, i)], b[at(tb, i)]);
}

// pair_latency: one thread; for each offset o[k] (bytes from a), times
// reps rounds of: drop the lines of a and a + o[k] from the L2 (so both
// loads go to DRAM), then load both at once; out[k] is the least cycles
// for the pair to arrive. Two lines in the same DRAM bank but different
// rows take longer (a row conflict) than lines in different banks.
extern "C" __global__ void pair_latency(const unsigned int *a, const unsigned long long *o, int n, int reps, unsigned int *out)
{
	if (threadIdx.x != 0 || blockIdx.x != 0)
		return;
	for (int k = 0; k < n; k++) {
		const unsigned int *b = a + o[k] / 4;
		long long best = 1LL << 62;
		for (int r = 0; r < reps; r++) {
			asm volatile("discard.global.L2 [%0], 128;" ::"l"(a) : "memory");
			asm volatile("discard.global.L2 [%0], 128;" ::"l"(b) : "memory");
			__threadfence();
			long long t0 = clock64();
			unsigned int va = ld_cg(a), vb = ld_cg(b);
			long long t1 = clock_after(va + vb); // both must have arrived
			best = min(best, t1 - t0);
		}
		out[k] = (unsigned int)best;
	}
}
