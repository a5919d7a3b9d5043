// The kernels several experiments' CUDA programs share.
#pragma once

// smid: each block's SM (%smid) into out[blockIdx.x], the block held about
// 20,000 cycles so that the grid spreads over every SM it may use.
__global__ void smid(unsigned *out)
{
	unsigned id;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
	if (threadIdx.x == 0)
		out[blockIdx.x] = id;
	long long t0 = clock64();
	while (clock64() - t0 < 20000) {
	}
}

// fma: each thread a chain of n dependent FMAs, compute-bound; the result
// is written so that the compiler keeps the work.
__global__ void fma(float *out, int n)
{
	float a = threadIdx.x * 1e-3f, b = 0.999f, c = 1e-4f;
	for (int i = 0; i < n; i++) {
		a = fmaf(a, b, c);
		b = fmaf(b, a, c);
	}
	if (a + b == 12345.f)
		out[blockIdx.x] = a;
}
