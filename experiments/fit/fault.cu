// fault: a tenant that faults, and one that runs beside it.
//   fault loop SECONDS   launch ~1 ms kernels and synchronize after each for
//                        SECONDS; print the first error and when (exit 3), or
//                        "survived" (exit 0)
//   fault fault DELAY_MS wait, then write to an invalid address (exit 4)
//   fault smids          print how many distinct SMs a 4096-block kernel ran on
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>
#include <set>
#include <cuda_runtime.h>

#include "../probe.cuh"

__global__ void spin(long long ns, int *out)
{
	long long t0 = clock64();
	while (clock64() - t0 < ns) {
	}
	if (threadIdx.x == 0)
		atomicAdd(out, 1);
}

__global__ void bad(int *p) { p[threadIdx.x] = 1; }

static double now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int *d;
	cudaMalloc(&d, 4);
	if (!strcmp(argv[1], "loop")) {
		double until = now() + atof(argc > 2 ? argv[2] : "5"), t0 = now();
		int n = 0;
		while (now() < until) {
			spin<<<132, 64>>>(1800000, d);
			cudaError_t e = cudaDeviceSynchronize();
			n++;
			if (e != cudaSuccess) {
				printf("{\"role\":\"loop\",\"error\":\"%s\",\"after_s\":%.3f,\"kernels\":%d}\n", cudaGetErrorName(e), now() - t0, n);
				return 3;
			}
		}
		printf("{\"role\":\"loop\",\"survived\":true,\"kernels\":%d}\n", n);
		return 0;
	}
	if (!strcmp(argv[1], "fault")) {
		std::this_thread::sleep_for(std::chrono::milliseconds(atoi(argc > 2 ? argv[2] : "1000")));
		bad<<<1, 32>>>((int *)0x10);
		cudaError_t e = cudaDeviceSynchronize();
		printf("{\"role\":\"fault\",\"error\":\"%s\",\"at_s\":%.3f}\n", cudaGetErrorName(e), now());
		return 4;
	}
	if (!strcmp(argv[1], "smids")) {
		unsigned *o, h[4096];
		cudaMalloc(&o, sizeof h);
		for (int r = 0; r < 3; r++)
			smid<<<4096, 32>>>(o);
		cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost);
		std::set<unsigned> s(h, h + 4096);
		printf("{\"distinct_sms\":%zu,\"error\":\"%s\"}\n", s.size(), cudaGetErrorName(cudaGetLastError()));
		return 0;
	}
	return 2;
}
