// first: the shortest useful CUDA program: create a context, run one empty
// kernel, wait for it. Timing a process of it from exec to exit measures the
// startup that carve run adds.
#include <cstdio>

__global__ void empty() {}

int main()
{
	empty<<<1, 32>>>();
	cudaError_t e = cudaDeviceSynchronize();
	if (e != cudaSuccess) {
		fprintf(stderr, "first: %s\n", cudaGetErrorString(e));
		return 1;
	}
	return 0;
}
