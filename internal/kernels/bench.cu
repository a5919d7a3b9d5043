// Kernels for carve's benchmarks. Compiled to PTX by gen.sh.

// sgemm: C = A * B for n x n row-major float matrices, n a multiple of 64.
// Blocks of 16x16 threads compute 64x64 tiles of C, four by four outputs per
// thread, through shared-memory tiles of A and B. Compute-bound for n >= 1024,
// and made of many independent blocks, so its time falls with the TPCs it
// gets: the workload of the granularity and enforcement benchmarks.
#define TS 64
#define WPT 4
extern "C" __global__ void sgemm(int n, const float *A, const float *B, float *C)
{
	__shared__ float As[TS][TS + 1];
	__shared__ float Bs[TS][TS + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row0 = blockIdx.y * TS, col0 = blockIdx.x * TS;
	float acc[WPT][WPT];
	for (int i = 0; i < WPT; i++)
		for (int j = 0; j < WPT; j++)
			acc[i][j] = 0.0f;
	for (int k0 = 0; k0 < n; k0 += TS) {
		for (int i = ty; i < TS; i += 16)
			for (int j = tx; j < TS; j += 16) {
				As[i][j] = A[(size_t)(row0 + i) * n + k0 + j];
				Bs[i][j] = B[(size_t)(k0 + i) * n + col0 + j];
			}
		__syncthreads();
#pragma unroll 8
		for (int k = 0; k < TS; k++) {
			float a[WPT], b[WPT];
#pragma unroll
			for (int i = 0; i < WPT; i++)
				a[i] = As[ty + 16 * i][k];
#pragma unroll
			for (int j = 0; j < WPT; j++)
				b[j] = Bs[k][tx + 16 * j];
#pragma unroll
			for (int i = 0; i < WPT; i++)
#pragma unroll
				for (int j = 0; j < WPT; j++)
					acc[i][j] += a[i] * b[j];
		}
		__syncthreads();
	}
	for (int i = 0; i < WPT; i++)
		for (int j = 0; j < WPT; j++)
			C[(size_t)(row0 + ty + 16 * i) * n + col0 + tx + 16 * j] = acc[i][j];
}
