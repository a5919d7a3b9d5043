// probe: what a program partitioned on several GPUs sees and where its
// kernels run, one GPU at a time by cudaSetDevice.
//   probe smid [REPS]   on every device: the SM count it reports and the
//                       distinct SMs (%smid) REPS launches of a 1024-block
//                       kernel ran on -> one JSON line a device
//   probe spin DEV MS   on device DEV, a compute-bound kernel launched
//                       back to back for about MS ms -> one JSON line: the
//                       launches and the mean time of one
// Each JSON line names the device by ordinal and UUID.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#include "../probe.cuh"

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e = (x);                                                               \
		if (e != cudaSuccess) {                                                            \
			printf("{\"error\":\"%s: %s\"}\n", #x, cudaGetErrorString(e));             \
			fflush(stdout);                                                            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static std::string uuid(int dev)
{
	cudaDeviceProp p;
	CHECK(cudaGetDeviceProperties(&p, dev));
	const unsigned char *u = (const unsigned char *)p.uuid.bytes;
	char s[64];
	snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return s;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "smid") == 0) {
		int reps = argc > 2 ? atoi(argv[2]) : 20, n;
		CHECK(cudaGetDeviceCount(&n));
		for (int dev = 0; dev < n; dev++) {
			CHECK(cudaSetDevice(dev));
			int sms;
			CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
			const int blocks = 1024;
			unsigned *d;
			CHECK(cudaMalloc(&d, blocks * sizeof(unsigned)));
			std::set<unsigned> seen;
			std::vector<unsigned> h(blocks);
			for (int r = 0; r < reps; r++) {
				smid<<<blocks, 32>>>(d);
				CHECK(cudaGetLastError());
				CHECK(cudaMemcpy(h.data(), d, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
				seen.insert(h.begin(), h.end());
			}
			CHECK(cudaFree(d));
			printf("{\"device\":%d,\"uuid\":\"%s\",\"sms_reported\":%d,\"smids\":[", dev, uuid(dev).c_str(), sms);
			const char *sep = "";
			for (unsigned s : seen) {
				printf("%s%u", sep, s);
				sep = ",";
			}
			printf("]}\n");
			fflush(stdout);
		}
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "spin") == 0) {
		int dev = atoi(argv[2]);
		double ms = atof(argv[3]);
		CHECK(cudaSetDevice(dev));
		float *d;
		CHECK(cudaMalloc(&d, 4096 * sizeof(float)));
		fma<<<2112, 256>>>(d, 20000);
		CHECK(cudaDeviceSynchronize());
		auto t0 = std::chrono::steady_clock::now();
		int launches = 0;
		double el = 0;
		while (el < ms) {
			fma<<<2112, 256>>>(d, 20000);
			CHECK(cudaDeviceSynchronize());
			launches++;
			el = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
		}
		printf("{\"device\":%d,\"uuid\":\"%s\",\"launches\":%d,\"ms_per_launch\":%.3f}\n", dev, uuid(dev).c_str(), launches,
		       el / launches);
		return 0;
	}
	fprintf(stderr, "usage: probe smid [REPS] | probe spin DEV MS\n");
	return 2;
}
