// Kernels for topology discovery. Compiled to PTX by gen.sh; carve embeds the
// PTX and the driver JIT-compiles it, so carve itself needs no CUDA toolkit.

// record_smid: thread 0 of each block spins for spin_ns (so that blocks are
// resident at the same time and spread over every SM they may use), then
// writes the id of the SM it ran on to out[block].
extern "C" __global__ void record_smid(unsigned int *out, unsigned long long spin_ns)
{
	if (threadIdx.x != 0)
		return;
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (t - t0 < spin_ns);
	unsigned int smid;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	out[blockIdx.x] = smid;
}
