// fma: a compute-bound CUDA C program that knows nothing of carve. Each
// kernel runs many blocks of FMA chains, so its time falls with the number
// of TPCs it may use. It launches kernels back to back for --seconds and
// prints, as one JSON line, the median and p99 kernel time over the middle
// of the run (the first and last 15% dropped), timed with CUDA events.
// --start-at EPOCH holds the timed loop until that wall-clock time, so that
// programs started together measure the same window.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <chrono>
#include <unistd.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void fma_chain(float *out, int iters)
{
	float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-4f;
	for (int i = 0; i < iters; i++) {
		a = fmaf(a, b, c);
		d = fmaf(d, c, b);
		c = fmaf(c, a, d) * 0.5f;
	}
	if (a + c + d == 42.0f) // never true in practice; keeps the chain alive
		out[blockIdx.x] = a + c + d;
}

int main(int argc, char **argv)
{
	double seconds = 4;
	int blocks = 132 * 32, iters = 4096;
	const char *label = "fma";
	double start_at = 0; // wall-clock second to begin at, so co-runners overlap exactly
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--blocks")) blocks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
		else if (!strcmp(argv[i], "--start-at")) start_at = atof(argv[i + 1]);
	}
	float *out;
	CHECK(cudaMalloc(&out, blocks * sizeof(float)));
	fma_chain<<<blocks, 256>>>(out, iters); // warm-up
	CHECK(cudaDeviceSynchronize());
	for (;;) {
		double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
		if (now >= start_at) break;
		usleep(1000);
	}
	struct rec { cudaEvent_t a, b; double t; };
	std::vector<rec> recs;
	auto t0 = std::chrono::steady_clock::now();
	for (;;) {
		double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		if (el > seconds) break;
		rec r;
		CHECK(cudaEventCreate(&r.a));
		CHECK(cudaEventCreate(&r.b));
		r.t = el;
		CHECK(cudaEventRecord(r.a));
		fma_chain<<<blocks, 256>>>(out, iters);
		CHECK(cudaGetLastError());
		CHECK(cudaEventRecord(r.b));
		CHECK(cudaEventSynchronize(r.b));
		recs.push_back(r);
	}
	std::vector<double> ms;
	for (auto &r : recs) {
		float m;
		CHECK(cudaEventElapsedTime(&m, r.a, r.b));
		if (r.t >= 0.15 * seconds && r.t <= 0.85 * seconds) ms.push_back(m);
	}
	std::sort(ms.begin(), ms.end());
	if (ms.empty()) { fprintf(stderr, "no samples\n"); return 1; }
	printf("{\"label\":\"%s\",\"kernels\":%zu,\"samples\":%zu,\"median_ms\":%.4f,\"p99_ms\":%.4f,\"min_ms\":%.4f}\n",
	       label, recs.size(), ms.size(), ms[ms.size() / 2], ms[(size_t)(ms.size() * 0.99)], ms[0]);
	return 0;
}
