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

// drop removes p's line from the L2 without writing it back (the pool is
// only read), so that the next load of it comes from DRAM.
__device__ static void drop(const unsigned int *p)
{
	asm volatile("discard.global.L2 [%0], 128;" ::"l"(p) : "memory");
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
			drop(a);
			drop(b);
			__threadfence();
			long long t0 = clock64();
			unsigned int va = ld_cg(a), vb = ld_cg(b);
			long long t1 = clock_after(va + vb); // both must have arrived
			best = min(best, t1 - t0);
		}
		out[k] = (unsigned int)best;
	}
}

// contend: blocks [0, hammers) are hammers, the rest probers. Every
// thread of a hammer loads the lines at hammer[] (byte offsets into pool)
// in turn, dropping each line after its load so that every load goes to
// DRAM, until all probers are done or it has made limit loads (then it
// counts itself in sync[2]: the hammering ended early). Thread 0 of each
// prober waits for the hammers to start (sync[0]), then times its share of
// the candidates (k = prober, prober + probers, ...): out[k] is the mean
// of reps DRAM loads of the line at cand[k], each after dropping it. A
// candidate that shares a DRAM bank or channel with the hammered lines
// waits behind them. With hammers = 0 the probers run alone. Every block
// must be resident at once (one block per SM, grid no larger than the GPU).
extern "C" __global__ void contend(const unsigned int *pool, const unsigned long long *hammer, int nh, int hammers,
				   const unsigned long long *cand, int ncand, int reps, unsigned long long limit,
				   unsigned int *out, unsigned int *sync)
{
	volatile unsigned int *vs = sync;
	int probers = gridDim.x - hammers;
	if ((int)blockIdx.x < hammers) {
		if (threadIdx.x == 0)
			atomicAdd(&sync[0], 1);
		unsigned int v = 0;
		unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x, n = 0;
		unsigned int lanes = __activemask();
		int leader = __ffs(lanes) - 1;
		for (;; i += (unsigned long long)hammers * blockDim.x, n++) {
			// one poll per warp and load: a hammered load can take
			// microseconds, so polling less often keeps the kernel
			// running long after the probers are done
			unsigned int stop = 0;
			if ((int)(threadIdx.x & 31) == leader)
				stop = vs[1] >= (unsigned int)probers;
			if (__shfl_sync(lanes, stop, leader))
				break;
			if (n >= limit) {
				if (threadIdx.x == 0)
					atomicAdd(&sync[2], 1);
				break;
			}
			const unsigned int *p = pool + hammer[i % nh] / 4;
			v += ld_cg(p + (v & 0x80000000u));
			drop(p);
		}
		if (v == 0xffffffffu) // never: keeps the loads
			sync[3] = v;
		return;
	}
	if (threadIdx.x != 0)
		return;
	long long t = clock64();
	while (vs[0] < (unsigned int)hammers && clock64() - t < 2000000000LL)
		;
	for (int k = blockIdx.x - hammers; k < ncand; k += probers) {
		const unsigned int *p = pool + cand[k] / 4;
		unsigned int v = 0;
		long long sum = 0;
		for (int r = 0; r < reps; r++) {
			drop(p);
			__threadfence();
			long long t0 = clock64();
			v = ld_cg(p + v);
			sum += clock_after(v) - t0;
		}
		out[k] = (unsigned int)(sum / reps) + v;
	}
	__threadfence();
	atomicAdd(&sync[1], 1);
}

// evict: one block. Thread 0 loads every target line (byte offsets into
// pool) so that it is in the L2; then the block loads each line of
// [from, to) once (line bytes apart), then the lines at extra[] (nx of
// them); then thread 0 times one load of each
// target again: out[k] is that load's cycles, an L2 hit (about 300-340) if
// the sweep left the target in place, a DRAM access (about 600 and more)
// if the sweep evicted it.
extern "C" __global__ void evict(const unsigned int *pool, const unsigned long long *target, int nt,
				 unsigned long long from, unsigned long long to, unsigned int line,
				 const unsigned long long *extra, int nx, unsigned int *out)
{
	unsigned int v = 0;
	if (threadIdx.x == 0)
		for (int k = 0; k < nt; k++)
			v += ld_cg(pool + target[k] / 4);
	__syncthreads();
	for (unsigned long long o = from + (unsigned long long)threadIdx.x * line; o < to; o += (unsigned long long)blockDim.x * line)
		v += ld_cg(pool + o / 4);
	__syncthreads();
	for (int k = threadIdx.x; k < nx; k += blockDim.x)
		v += ld_cg(pool + extra[k] / 4);
	__syncthreads();
	if (threadIdx.x != 0) {
		if (v == 0xffffffffu)
			out[0] = v;
		return;
	}
	for (int k = 0; k < nt; k++) {
		const unsigned int *p = pool + target[k] / 4 + (v & 0x80000000u);
		long long t0 = clock64();
		unsigned int w = ld_cg(p);
		out[k] = (unsigned int)(clock_after(w) - t0) + (w & 0x80000000u);
	}
}
