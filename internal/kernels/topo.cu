// Kernels for topology discovery. Compiled to PTX by gen.sh; carve embeds the
// PTX and the driver JIT-compiles it, so carve itself needs no CUDA toolkit.

// record_smid: thread 0 of each block spins, then writes the id of the SM it
// ran on to out[block]. Launched with enough dynamic shared memory that one
// block fills an SM, so that blocks spread over every SM they may use and a
// thread-block cluster covers distinct SMs. The spin lasts between spin_ns
// and 2*spin_ns, varied per block, so that blocks free their SMs at different
// times and later clusters land on SMs earlier ones left idle.
extern "C" __global__ void record_smid(unsigned int *out, unsigned long long spin_ns)
{
	if (threadIdx.x != 0)
		return;
	unsigned int h = blockIdx.x * 2654435761u;
	h ^= h >> 15;
	unsigned long long spin = spin_ns + (spin_ns * (h & 1023)) / 1024;
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (t - t0 < spin);
	unsigned int smid;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	out[blockIdx.x] = smid;
}
