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

// mandelbrot: the compute-heavy competitor. Each thread iterates
// z = z^2 + c for one pixel of a w x h view of [-2,1] x [-1.5,1.5] and writes
// the iteration count at which |z| > 2 (max_iter if never).
extern "C" __global__ void mandelbrot(int w, int h, int max_iter, unsigned int *out)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h)
		return;
	float cr = -2.0f + 3.0f * x / w, ci = -1.5f + 3.0f * y / h;
	float zr = 0.0f, zi = 0.0f;
	int i = 0;
	for (; i < max_iter; i++) {
		float zr2 = __fmul_rn(zr, zr), zi2 = __fmul_rn(zi, zi);
		if (__fadd_rn(zr2, zi2) > 4.0f)
			break;
		float t = __fadd_rn(__fsub_rn(zr2, zi2), cr);
		zi = __fadd_rn(__fmul_rn(2.0f * zr, zi), ci);
		zr = t;
	}
	out[y * w + x] = i;
}

// randwalk_init fills buf[i] with a hash of i.
extern "C" __global__ void randwalk_init(unsigned int *buf, unsigned long long n)
{
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x) {
		unsigned int h = (unsigned int)i * 2654435761u;
		buf[i] = h ^ (h >> 13);
	}
}

// randwalk: the memory-heavy competitor. Each thread walks steps dependent,
// scattered loads through buf (n a power of two, far larger than the L2):
// the next index depends on the value just loaded. out[thread] is the last
// index, so that the walk cannot be skipped.
extern "C" __global__ void randwalk(const unsigned int *buf, unsigned long long n, int steps, unsigned int *out)
{
	unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long idx = (t * 2654435761u) & (n - 1);
	for (int s = 0; s < steps; s++)
		idx = (buf[idx] ^ (idx * 40503u) ^ s) & (n - 1);
	out[t] = (unsigned int)idx;
}

// The isolation suite (in the spirit of FGPU's Table I): matrix multiply is
// sgemm above; the others follow. Each is checked against a CPU reference.

// vadd: c = a + b, grid-stride. Memory-bound.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned long long n)
{
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)gridDim.x * blockDim.x)
		c[i] = __fadd_rn(a[i], b[i]);
}

// bitonic_step: one compare-exchange stage (j, k) of a bitonic sorting
// network over n = gridDim.x * blockDim.x keys, ascending. A sort is
// log2(n) * (log2(n) + 1) / 2 launches of it: many short kernels.
extern "C" __global__ void bitonic_step(unsigned int *keys, unsigned int j, unsigned int k)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned int p = i ^ j;
	if (p <= i)
		return;
	unsigned int a = keys[i], b = keys[p];
	bool up = (i & k) == 0;
	if ((up && a > b) || (!up && a < b)) {
		keys[i] = b;
		keys[p] = a;
	}
}

// scalar_prod: out[v] = sum over i < len of a[v*len + i] * b[v*len + i], one
// block of 256 threads per vector pair, reduced in shared memory.
extern "C" __global__ void scalar_prod(const float *a, const float *b, float *out, int len)
{
	__shared__ float part[256];
	const float *x = a + (size_t)blockIdx.x * len, *y = b + (size_t)blockIdx.x * len;
	float s = 0.0f;
	for (int i = threadIdx.x; i < len; i += blockDim.x)
		s = __fadd_rn(s, __fmul_rn(x[i], y[i]));
	part[threadIdx.x] = s;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			part[threadIdx.x] = __fadd_rn(part[threadIdx.x], part[threadIdx.x + w]);
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = part[0];
}

// fwt_step: one radix-2 stage of an orthonormal fast Walsh-Hadamard
// transform in place over n floats: pairs (i, i + half) in blocks of
// 2 * half become ((a + b) / sqrt2, (a - b) / sqrt2). A transform is
// log2(n) launches, each streaming the whole array: memory-heavy.
extern "C" __global__ void fwt_step(float *d, unsigned long long n, unsigned long long half)
{
	const float r = 0.70710678118654752f;
	for (unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < n / 2;
	     t += (unsigned long long)gridDim.x * blockDim.x) {
		unsigned long long i = (t / half) * 2 * half + t % half;
		float a = d[i], b = d[i + half];
		d[i] = __fmul_rn(__fadd_rn(a, b), r);
		d[i + half] = __fmul_rn(__fsub_rn(a, b), r);
	}
}

// stencil5: one Jacobi step of a CFD-like 2D diffusion over a w x h grid:
// each interior cell becomes the mean of itself and its four neighbours;
// border cells are copied.
extern "C" __global__ void stencil5(const float *in, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h)
		return;
	size_t i = (size_t)y * w + x;
	if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
		out[i] = in[i];
		return;
	}
	float s = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(in[i], in[i - 1]), in[i + 1]), in[i - w]), in[i + w]);
	out[i] = __fmul_rn(s, 0.2f);
}
