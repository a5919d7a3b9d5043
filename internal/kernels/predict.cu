// The prediction suite: kernels of the three kinds the latency model tells
// apart, after Table 2 of the memory-aware latency prediction paper.
// Memory-intensive: vadd (in bench.cu), saxpy, copy. Hybrid: conv2d, mvt,
// pathfinder. Computational: raytrace, dxtc. Each runs as one launch and is
// checked against a CPU reference (internal/predict) on a small input.

#define GRID_STRIDE(i, n)                                                                        \
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < (n); \
	     i += (unsigned long long)gridDim.x * blockDim.x)

// saxpy: y = a * x + y.
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n)
{
	GRID_STRIDE(i, n)
	y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}

// copy: dst = src.
extern "C" __global__ void copy(const float *src, float *dst, unsigned long long n)
{
	GRID_STRIDE(i, n)
	dst[i] = src[i];
}

// conv2d: out = in convolved with a 5 x 5 filter f (row-major), zero outside
// the w x h image. One thread per output pixel.
extern "C" __global__ void conv2d(const float *in, const float *f, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h)
		return;
	float s = 0.0f;
	for (int dy = -2; dy <= 2; dy++)
		for (int dx = -2; dx <= 2; dx++) {
			int xx = x + dx, yy = y + dy;
			float v = (xx >= 0 && xx < w && yy >= 0 && yy < h) ? in[(size_t)yy * w + xx] : 0.0f;
			s = __fadd_rn(s, __fmul_rn(v, f[(dy + 2) * 5 + dx + 2]));
		}
	out[(size_t)y * w + x] = s;
}

// mvt: Polybench's matrix-vector product and transpose in one launch over
// an n x n row-major matrix a: thread i < n computes x1[i] = row i . y1
// (strided loads), thread n + j computes x2[j] = column j . y2 (coalesced).
extern "C" __global__ void mvt(const float *a, const float *y1, const float *y2, float *x1, float *x2, int n)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= 2 * n)
		return;
	float s = 0.0f;
	if (t < n) {
		for (int j = 0; j < n; j++)
			s = __fadd_rn(s, __fmul_rn(a[(size_t)t * n + j], y1[j]));
		x1[t] = s;
	} else {
		int j = t - n;
		for (int i = 0; i < n; i++)
			s = __fadd_rn(s, __fmul_rn(a[(size_t)i * n + j], y2[i]));
		x2[j] = s;
	}
}

// pathfinder: Rodinia's dynamic programme over a rows x cols grid of wall
// costs, in strips of blockDim.x columns that each block solves on its own
// (a strip's edge columns see no neighbour outside it): cost[c] of row r is
// wall[r][c] + the least of cost[c-1], cost[c], cost[c+1] of row r - 1.
// out holds the last row's costs.
extern "C" __global__ void pathfinder(const int *wall, int *out, int cols, int rows)
{
	extern __shared__ int cost[];
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	int t = threadIdx.x, width = blockDim.x;
	cost[t] = c < cols ? wall[c] : 0;
	__syncthreads();
	for (int r = 1; r < rows; r++) {
		int best = cost[t];
		if (t > 0)
			best = min(best, cost[t - 1]);
		if (t < width - 1)
			best = min(best, cost[t + 1]);
		int next = c < cols ? best + wall[(size_t)r * cols + c] : 0;
		__syncthreads();
		cost[t] = next;
		__syncthreads();
	}
	if (c < cols)
		out[c] = cost[t];
}

// raytrace: one primary ray per pixel of a w x h image from the origin
// through a screen at z = 1, against ns spheres (x, y, z, r each); the
// nearest hit is shaded by a light at (10, 10, -10) with a shadow ray
// against every sphere. Writes a grey level in [0, 1].
extern "C" __global__ void raytrace(const float4 *spheres, int ns, float *img, int w, int h)
{
	int px = blockIdx.x * blockDim.x + threadIdx.x;
	int py = blockIdx.y * blockDim.y + threadIdx.y;
	if (px >= w || py >= h)
		return;
	float dx = __fsub_rn(__fdiv_rn(__fmul_rn(2.0f, (float)px), (float)w), 1.0f);
	float dy = __fsub_rn(__fdiv_rn(__fmul_rn(2.0f, (float)py), (float)h), 1.0f);
	float dz = 1.0f;
	float inv = __frsqrt_rn(__fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), 1.0f));
	dx = __fmul_rn(dx, inv), dy = __fmul_rn(dy, inv), dz = inv;
	float best = 1e30f;
	int hit = -1;
	for (int i = 0; i < ns; i++) {
		float4 s = spheres[i];
		// |t d - c|^2 = r^2 with |d| = 1: t^2 - 2 t (d.c) + |c|^2 - r^2 = 0
		float b = __fadd_rn(__fadd_rn(__fmul_rn(dx, s.x), __fmul_rn(dy, s.y)), __fmul_rn(dz, s.z));
		float cc = __fsub_rn(__fadd_rn(__fadd_rn(__fmul_rn(s.x, s.x), __fmul_rn(s.y, s.y)), __fmul_rn(s.z, s.z)), __fmul_rn(s.w, s.w));
		float disc = __fsub_rn(__fmul_rn(b, b), cc);
		if (disc > 0.0f) {
			float t = __fsub_rn(b, __fsqrt_rn(disc));
			if (t > 1e-3f && t < best)
				best = t, hit = i;
		}
	}
	float shade = 0.0f;
	if (hit >= 0) {
		float4 s = spheres[hit];
		float hx = __fmul_rn(best, dx), hy = __fmul_rn(best, dy), hz = __fmul_rn(best, dz);
		float nx = __fdiv_rn(__fsub_rn(hx, s.x), s.w), ny = __fdiv_rn(__fsub_rn(hy, s.y), s.w), nz = __fdiv_rn(__fsub_rn(hz, s.z), s.w);
		float lx = __fsub_rn(10.0f, hx), ly = __fsub_rn(10.0f, hy), lz = __fsub_rn(-10.0f, hz);
		float li = __frsqrt_rn(__fadd_rn(__fadd_rn(__fmul_rn(lx, lx), __fmul_rn(ly, ly)), __fmul_rn(lz, lz)));
		lx = __fmul_rn(lx, li), ly = __fmul_rn(ly, li), lz = __fmul_rn(lz, li);
		float lambert = __fadd_rn(__fadd_rn(__fmul_rn(nx, lx), __fmul_rn(ny, ly)), __fmul_rn(nz, lz));
		bool lit = lambert > 0.0f;
		for (int i = 0; lit && i < ns; i++) {
			if (i == hit)
				continue;
			float4 o = spheres[i];
			float cx = __fsub_rn(o.x, hx), cy = __fsub_rn(o.y, hy), cz = __fsub_rn(o.z, hz);
			float b = __fadd_rn(__fadd_rn(__fmul_rn(lx, cx), __fmul_rn(ly, cy)), __fmul_rn(lz, cz));
			float cc = __fsub_rn(__fadd_rn(__fadd_rn(__fmul_rn(cx, cx), __fmul_rn(cy, cy)), __fmul_rn(cz, cz)), __fmul_rn(o.w, o.w));
			if (b > 0.0f && __fsub_rn(__fmul_rn(b, b), cc) > 0.0f)
				lit = false;
		}
		shade = lit ? __fadd_rn(0.1f, __fmul_rn(0.9f, lambert)) : 0.1f;
	}
	img[(size_t)py * w + px] = shade;
}

// dxtc: DXT1-style compression of a w x h RGB image (one uint32 0x00BBGGRR
// per pixel) in 4 x 4 blocks, one thread per block. Every pair of the
// block's 16 colours is tried as endpoints of a 4-colour palette (the two
// and their 1/3 and 2/3 mixes); the pair with the least summed squared
// error wins. out[2b] = endpoints (lo | hi << 16, as 5:6:5), out[2b+1] =
// 2-bit palette indices of the 16 pixels. Integer only: the CPU matches it
// bit for bit.
__device__ static int dxtc_err(unsigned int a, unsigned int b)
{
	int dr = (int)(a & 255) - (int)(b & 255), dg = (int)((a >> 8) & 255) - (int)((b >> 8) & 255),
	    db = (int)((a >> 16) & 255) - (int)((b >> 16) & 255);
	return dr * dr + dg * dg + db * db;
}

__device__ static unsigned int dxtc_mix(unsigned int a, unsigned int b, int wa, int wb)
{
	unsigned int r = ((a & 255) * wa + (b & 255) * wb) / 3;
	unsigned int g = (((a >> 8) & 255) * wa + ((b >> 8) & 255) * wb) / 3;
	unsigned int bl = (((a >> 16) & 255) * wa + ((b >> 16) & 255) * wb) / 3;
	return r | g << 8 | bl << 16;
}

__device__ static unsigned int dxtc_565(unsigned int c)
{
	return ((c & 255) >> 3) << 11 | (((c >> 8) & 255) >> 2) << 5 | ((c >> 16) & 255) >> 3;
}

extern "C" __global__ void dxtc(const unsigned int *img, unsigned int *out, int w, int h)
{
	int bw = w / 4, b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b >= bw * (h / 4))
		return;
	int bx = b % bw, by = b / bw;
	unsigned int px[16];
	for (int i = 0; i < 16; i++)
		px[i] = img[(size_t)(by * 4 + i / 4) * w + bx * 4 + i % 4];
	int bestErr = 0x7fffffff, bi = 0, bj = 0;
	for (int i = 0; i < 16; i++)
		for (int j = i; j < 16; j++) {
			unsigned int pal[4] = {px[i], px[j], dxtc_mix(px[i], px[j], 2, 1), dxtc_mix(px[i], px[j], 1, 2)};
			int e = 0;
			for (int k = 0; k < 16; k++) {
				int m = dxtc_err(px[k], pal[0]);
				for (int p = 1; p < 4; p++)
					m = min(m, dxtc_err(px[k], pal[p]));
				e += m;
			}
			if (e < bestErr)
				bestErr = e, bi = i, bj = j;
		}
	unsigned int pal[4] = {px[bi], px[bj], dxtc_mix(px[bi], px[bj], 2, 1), dxtc_mix(px[bi], px[bj], 1, 2)};
	unsigned int idx = 0;
	for (int k = 0; k < 16; k++) {
		int m = dxtc_err(px[k], pal[0]), q = 0;
		for (int p = 1; p < 4; p++) {
			int e = dxtc_err(px[k], pal[p]);
			if (e < m)
				m = e, q = p;
		}
		idx |= (unsigned int)q << (2 * k);
	}
	out[2 * b] = dxtc_565(pal[0]) | dxtc_565(pal[1]) << 16;
	out[2 * b + 1] = idx;
}
