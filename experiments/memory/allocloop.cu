// An allocation-heavy loop for the memory account's cost: N pairs of
// cuMemAlloc_v2 / cuMemFree_v2 of SIZE bytes through the driver API (the
// runtime's cudaMalloc reaches the same through cuGetProcAddress); prints
// nanoseconds per pair. Usage: allocloop N SIZE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	size_t size = argc > 2 ? strtoull(argv[2], 0, 10) : (1 << 20);
	CUdevice d; CUcontext c; CUdeviceptr p;
	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) return 1;
	for (int i = 0; i < 100; i++) { if (cuMemAlloc(&p, size)) return 2; cuMemFree(p); }
	double t = now();
	for (int i = 0; i < n; i++) { if (cuMemAlloc(&p, size)) return 2; cuMemFree(p); }
	printf("{\"pairs\":%d,\"size\":%zu,\"ns_per_pair\":%.1f}\n", n, size, (now() - t) / n);
	return 0;
}
