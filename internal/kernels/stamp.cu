// The overhead benchmark's kernel, in a module of its own so that a program
// measuring startup loads (and JIT-compiles) as little as possible.

// stamp writes the GPU's global nanosecond timer, as the kernel starts, to
// out[i]. Launched with one block of one thread.
extern "C" __global__ void stamp(unsigned long long *out, int i)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	out[i] = t;
}

// clock_sync writes the global timer to host-mapped memory (*out) over and
// over for ns nanoseconds. The host pairs each new value it reads with its
// own clock, which bounds the offset between the two clocks from above.
extern "C" __global__ void clock_sync(volatile unsigned long long *out, unsigned long long ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		*out = t;
		__threadfence_system();
	} while (t - t0 < ns);
}
