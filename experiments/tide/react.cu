// react: what tide costs and how fast it sees work finish, from inside a
// partitioned program (run it under carve run).
//   react idle N     N times: a ~1 ms kernel, wait for it, then time until
//                    this process's control block says its LS work is done
//   react launch N   host ns per empty launch, median of N
//   react clock N    ns per clock_gettime(CLOCK_MONOTONIC), median of N
//                    rounds of 1000 calls (coarse N: CLOCK_MONOTONIC_COARSE)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <vector>
#include <algorithm>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void spin(long long n)
{
	long long t0 = clock64();
	while (clock64() - t0 < n) {
	}
}
__global__ void empty() {}

static double ns()
{
	return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 200;
	std::vector<double> v;
	if (!strcmp(argv[1], "idle")) {
		char path[512];
		snprintf(path, sizeof path, "%s/%d", getenv("CARVE_CTL_DIR"), getpid());
		int fd = open(path, O_RDONLY);
		volatile unsigned *state = fd < 0 ? nullptr : (volatile unsigned *)((char *)mmap(0, 1024, PROT_READ, MAP_SHARED, fd, 0) + 576);
		if (!state) {
			printf("{\"error\":\"no control block\"}\n");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			spin<<<132, 64>>>(2000000);
			cudaStreamSynchronize(0);
			double t = ns();
			while (*state != 1 && ns() - t < 1e8) {
			}
			v.push_back((ns() - t) / 1e3);
			usleep(500);
		}
	} else if (!strcmp(argv[1], "clock") || !strcmp(argv[1], "coarse")) {
		clockid_t id = strcmp(argv[1], "clock") ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC;
		struct timespec ts;
		for (int i = 0; i < n; i++) {
			double t = ns();
			for (int j = 0; j < 1000; j++)
				clock_gettime(id, &ts);
			v.push_back((ns() - t) / 1000);
		}
	} else {
		for (int i = 0; i < 100; i++)
			empty<<<1, 32>>>();
		cudaDeviceSynchronize();
		for (int i = 0; i < n; i++) {
			double t = ns();
			empty<<<1, 32>>>();
			v.push_back(ns() - t);
			if (i % 64 == 63)
				cudaDeviceSynchronize();
		}
	}
	std::sort(v.begin(), v.end());
	double sum = 0;
	for (double x : v)
		sum += x;
	printf("{\"mode\":\"%s\",\"n\":%zu,\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f,\"mean\":%.2f,\"unit\":\"%s\"}\n", argv[1], v.size(),
	       v[v.size() / 2], v[v.size() * 99 / 100], v.back(), sum / v.size(), strcmp(argv[1], "idle") ? "ns" : "us");
	return 0;
}
