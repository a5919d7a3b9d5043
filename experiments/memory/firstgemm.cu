// The first use of cuBLAS in a process, the part of a model's first step
// that loads kernels: a handle, then one GEMM of each of 48 shapes and types
// (each new kernel loaded lazily on its first launch), synchronized. Prints
// one JSON line: the wall time of that phase, its user and system CPU time
// and context switches, and the whole process's. Usage: firstgemm LABEL
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static double cpu(const struct timeval *t) { return t->tv_sec * 1e3 + t->tv_usec / 1e3; }
int main(int argc, char **argv) {
	double t0 = now();
	void *a, *b, *c;
	size_t most = 4096ull * 4096 * 4;
	if (cudaMalloc(&a, most) || cudaMalloc(&b, most) || cudaMalloc(&c, most)) return 1;
	cudaMemset(a, 0, most); cudaMemset(b, 0, most);
	cudaDeviceSynchronize();
	double init = now() - t0;
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	double t = now();
	cublasHandle_t h;
	if (cublasCreate(&h)) return 2;
	const int sizes[] = {64, 256, 1024, 4096};
	const cudaDataType types[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF};
	const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T};
	float one = 1, zero = 0;
	int gemms = 0;
	for (int s = 0; s < 4; s++)
		for (int ty = 0; ty < 3; ty++)
			for (int o = 0; o < 2; o++)
				for (int k = 0; k < 2; k++) {
					int m = sizes[s], n = sizes[s] / (k + 1), kk = sizes[(s + k) % 4];
					if (cublasGemmEx(h, ops[o], CUBLAS_OP_N, m, n, kk, &one, a, types[ty], o ? kk : m, b, types[ty], kk,
							 &zero, c, types[ty], m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)) return 3;
					gemms++;
				}
	if (cudaDeviceSynchronize()) return 4;
	double took = now() - t;
	getrusage(RUSAGE_SELF, &r1);
	printf("{\"label\":\"%s\",\"init_ms\":%.3f,\"gemms\":%d,\"first_ms\":%.3f,\"user_ms\":%.1f,\"sys_ms\":%.1f,"
	       "\"voluntary_switches\":%ld,\"involuntary_switches\":%ld,\"process_user_ms\":%.1f,\"process_sys_ms\":%.1f}\n",
	       argc > 1 ? argv[1] : "", init, gemms, took, cpu(&r1.ru_utime) - cpu(&r0.ru_utime), cpu(&r1.ru_stime) - cpu(&r0.ru_stime),
	       r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw, cpu(&r1.ru_utime), cpu(&r1.ru_stime));
	return 0;
}
