// launchcost: host time per kernel launch of an empty kernel, the cost a
// launch hook adds to. Prints one JSON line: ns per launch over rounds of
// 1000 launches (median and min over rounds).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void empty() {}

int main(int argc, char **argv)
{
	int rounds = 50;
	const char *label = argc > 1 ? argv[1] : "launch";
	empty<<<1, 32>>>();
	if (cudaDeviceSynchronize() != cudaSuccess) { fprintf(stderr, "warm-up failed\n"); return 1; }
	std::vector<double> per;
	for (int r = 0; r < rounds; r++) {
		auto t0 = std::chrono::steady_clock::now();
		for (int i = 0; i < 1000; i++) empty<<<1, 32>>>();
		auto t1 = std::chrono::steady_clock::now();
		if (cudaDeviceSynchronize() != cudaSuccess) { fprintf(stderr, "launch failed\n"); return 1; }
		per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / 1000);
	}
	std::sort(per.begin(), per.end());
	printf("{\"label\":\"%s\",\"launches\":%d,\"median_ns\":%.1f,\"min_ns\":%.1f}\n", label, rounds * 1000, per[per.size() / 2], per[0]);
	return 0;
}
