// tenant: what a container given a carve claim sees and how fast it runs.
//   tenant START SECONDS
// prints one JSON line: the SM count the device reports, the distinct SMs
// a 4096-block kernel ran on, then, from the Unix time START for SECONDS,
// the duration of each launch of a compute-bound kernel (p50, p99, count).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

#include "../probe.cuh"

static double now()
{
	return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e = (x);                                                               \
		if (e != cudaSuccess) {                                                            \
			printf("{\"error\":\"%s: %s\"}\n", #x, cudaGetErrorString(e));             \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: tenant START SECONDS\n");
		return 2;
	}
	double start = atof(argv[1]), secs = atof(argv[2]);
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	unsigned *o, h[4096];
	float *f;
	CHECK(cudaMalloc(&o, sizeof h));
	CHECK(cudaMalloc(&f, 4096 * sizeof(float)));
	smid<<<4096, 32>>>(o);
	CHECK(cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost));
	std::set<unsigned> seen(h, h + 4096);
	fma<<<2112, 256>>>(f, 2000);
	CHECK(cudaDeviceSynchronize());
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	if (start > now())
		std::this_thread::sleep_for(std::chrono::duration<double>(start - now()));
	std::vector<float> ms;
	double until = now() + secs;
	while (now() < until) {
		cudaEventRecord(a);
		fma<<<2112, 256>>>(f, 20000);
		cudaEventRecord(b);
		CHECK(cudaEventSynchronize(b));
		float t;
		cudaEventElapsedTime(&t, a, b);
		ms.push_back(t);
	}
	if (ms.empty()) {
		printf("{\"error\":\"no launch ran\"}\n");
		return 1;
	}
	std::sort(ms.begin(), ms.end());
	printf("{\"sms_seen\":%d,\"smids\":[", sms);
	int i = 0;
	for (unsigned s : seen)
		printf("%s%u", i++ ? "," : "", s);
	printf("],\"launches\":%zu,\"p50_ms\":%.4f,\"p99_ms\":%.4f}\n", ms.size(), ms[ms.size() / 2],
	       ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]);
	return 0;
}
