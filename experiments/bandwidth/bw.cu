// bw.cu: the programs of the bandwidth study. Each mode prints one JSON line.
//   stream SECS             copies 1 GiB to another without pause; GB/s moved
//   victim REPS             vector add over 3 x 256 MiB, each launch timed
//   duty SHARE EPOCH_US SECS  copies in pieces of 64 MiB for SHARE of each
//                           epoch, then waits out the epoch (a held tenant)
//   kernels                 kernels from memory- to compute-bound, each's
//                           median time (for the scaling estimator)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("{\"error\":\"%s: %s\"}\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

// copy: b = a, float4 a thread, grid-stride
__global__ void copy(const float4 *a, float4 *b, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		b[i] = a[i];
}

__global__ void vadd(const float4 *a, const float4 *b, float4 *c, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float4 x = a[i], y = b[i];
		c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
	}
}

// work: reads a, does k dependent FMAs per element, writes b: k sets the
// arithmetic intensity (0: a copy; large: compute-bound)
__global__ void work(const float *a, float *b, size_t n, int k)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float x = a[i];
		for (int j = 0; j < k; j++)
			x = fmaf(x, 0.999f, 1e-4f);
		b[i] = x;
	}
}

// gather: each thread follows a chain of random indices (latency-bound)
__global__ void gather(const unsigned *idx, unsigned *out, size_t n, int steps)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	unsigned p = (unsigned)(i % n);
	for (int s = 0; s < steps; s++)
		p = idx[p];
	out[i] = p;
}

static const int GRID = 132 * 16, BLOCK = 256;

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bw stream SECS | victim REPS | duty SHARE EPOCH_US SECS | kernels\n");
		return 2;
	}
	const char *mode = argv[1];
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	if (!strcmp(mode, "stream") || !strcmp(mode, "duty")) {
		int duty = !strcmp(mode, "duty");
		size_t bytes = duty ? (64ull << 20) : (1ull << 30);
		float4 *a, *b;
		CK(cudaMalloc(&a, bytes));
		CK(cudaMalloc(&b, bytes));
		CK(cudaMemset(a, 1, bytes));
		double share = duty ? atof(argv[2]) : 1, epoch = duty ? atof(argv[3]) / 1e6 : 0;
		double secs = atof(argv[duty ? 4 : 2]);
		copy<<<GRID, BLOCK, 0, s>>>(a, b, bytes / 16);
		CK(cudaStreamSynchronize(s));
		double t0 = now_s(), busy = 0;
		long n = 0;
		while (now_s() - t0 < secs) {
			double es = now_s();
			do {
				copy<<<GRID, BLOCK, 0, s>>>(a, b, bytes / 16);
				n++;
				CK(cudaStreamSynchronize(s));
			} while (duty && now_s() - es < share * epoch);
			busy += now_s() - es;
			if (duty) {
				double left = epoch - (now_s() - es);
				if (left > 0)
					usleep((useconds_t)(left * 1e6));
			}
		}
		double el = now_s() - t0;
		printf("{\"mode\":\"%s\",\"share\":%g,\"epoch_us\":%g,\"launches\":%ld,\"seconds\":%.3f,\"busy\":%.3f,\"gbps\":%.1f}\n", mode,
		       share, epoch * 1e6, n, el, busy / el, 2.0 * bytes * n / el / 1e9);
		return 0;
	}
	if (!strcmp(mode, "victim")) {
		int reps = atoi(argv[2]);
		size_t bytes = 256ull << 20;
		float4 *a, *b, *c;
		CK(cudaMalloc(&a, bytes));
		CK(cudaMalloc(&b, bytes));
		CK(cudaMalloc(&c, bytes));
		CK(cudaMemset(a, 1, bytes));
		CK(cudaMemset(b, 1, bytes));
		std::vector<double> ms;
		for (int r = 0; r < reps + 5; r++) {
			CK(cudaEventRecord(e0, s));
			vadd<<<GRID, BLOCK, 0, s>>>(a, b, c, bytes / 16);
			CK(cudaEventRecord(e1, s));
			CK(cudaEventSynchronize(e1));
			float t;
			CK(cudaEventElapsedTime(&t, e0, e1));
			if (r >= 5)
				ms.push_back(t);
		}
		double sum = 0;
		for (double x : ms)
			sum += x;
		std::vector<double> sorted = ms;
		std::sort(sorted.begin(), sorted.end());
		printf("{\"mode\":\"victim\",\"reps\":%d,\"mean_ms\":%.4f,\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"gbps\":%.1f}\n", reps, sum / reps,
		       sorted[reps / 2], sorted[reps * 99 / 100], 3.0 * bytes / (sum / reps / 1e3) / 1e9);
		return 0;
	}
	if (!strcmp(mode, "kernels")) {
		size_t n = 64ull << 20; // floats: 256 MiB
		float *a, *b;
		unsigned *idx, *out;
		CK(cudaMalloc(&a, n * 4));
		CK(cudaMalloc(&b, n * 4));
		CK(cudaMemset(a, 0, n * 4));
		size_t m = 16ull << 20;
		CK(cudaMalloc(&idx, m * 4));
		CK(cudaMalloc(&out, GRID * BLOCK * 4));
		std::vector<unsigned> h(m);
		srand(1);
		for (size_t i = 0; i < m; i++)
			h[i] = (unsigned)(((size_t)rand() * 65537u + i) % m);
		CK(cudaMemcpy(idx, h.data(), m * 4, cudaMemcpyHostToDevice));
		struct {
			const char *name;
			int k;
			double bytes;
		} ks[] = {{"copy", 0, 8.0 * n}, {"fma4", 4, 8.0 * n}, {"fma16", 16, 8.0 * n}, {"fma64", 64, 8.0 * n}, {"fma256", 256, 8.0 * n}, {"gather", -1, 0}};
		printf("{\"mode\":\"kernels\",\"kernels\":[");
		for (int w = 0; w < 6; w++) {
			std::vector<double> ms;
			for (int r = 0; r < 23; r++) {
				CK(cudaEventRecord(e0, s));
				if (ks[w].k >= 0)
					work<<<GRID, BLOCK, 0, s>>>(a, b, n, ks[w].k);
				else
					gather<<<GRID, BLOCK, 0, s>>>(idx, out, m, 64);
				CK(cudaEventRecord(e1, s));
				CK(cudaEventSynchronize(e1));
				float t;
				CK(cudaEventElapsedTime(&t, e0, e1));
				if (r >= 3)
					ms.push_back(t);
			}
			double md = median(ms);
			printf("%s{\"name\":\"%s\",\"median_ms\":%.4f,\"gbps_nominal\":%.1f}", w ? "," : "", ks[w].name, md,
			       ks[w].bytes / (md / 1e3) / 1e9);
		}
		printf("]}\n");
		return 0;
	}
	fprintf(stderr, "bw: unknown mode %s\n", mode);
	return 2;
}
