// follow.cu: do graphs follow carve set under carve's shim? Run under
// carve run -t A; it captures a graph of an SM-id probe and a saxpy,
// instantiates it and destroys the captured graph (as PyTorch does),
// moves itself with carve set (the carve binary is its first argument)
// and replays: the probe must run on the new TPCs alone (those an eager
// probe ran on after the move), the saxpy's output stay right, and a
// change of the saxpy node after the move (cuGraphExecKernelNodeSetParams)
// hold. It prints PASS or FAIL for each, then the cost of the first
// replay after a move against a plain replay, on a graph of 400 kernel
// nodes. Usage: carve run -t A -- follow CARVE TPCS_B TPCS_C
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../probe.cuh"

#define BLOCKS 1056 /* 8 a SM */
#define N (1 << 20)
#define CK(x) do { int e_ = (int)(x); if (e_) { printf("FAIL %s: %d (line %d)\n", #x, e_, __LINE__); exit(1); } } while (0)

__global__ void saxpy(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

__global__ void tiny(float *p) { if (threadIdx.x == 0) p[blockIdx.x] += 1.f; }

static unsigned *d_sm;
static float *d_x, *d_y;
static cudaStream_t s;
static float expect; /* y[i] / (i % 7): the sum of the saxpys' a so far */
static int failed;

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void verdict(int ok, const char *what)
{
	printf("%s %s\n", ok ? "PASS" : "FAIL", what);
	failed |= !ok;
}

/* seen: the SMs the last probe ran on; returns their count */
static int seen(unsigned char *on)
{
	static unsigned h[BLOCKS];
	CK(cudaMemcpy(h, d_sm, sizeof h, cudaMemcpyDeviceToHost));
	memset(on, 0, 256);
	int n = 0;
	for (int i = 0; i < BLOCKS; i++)
		if (!on[h[i] & 255]++)
			n++;
	return n;
}

static int subset(const unsigned char *a, const unsigned char *b) /* a's SMs all in b */
{
	for (int i = 0; i < 256; i++)
		if (a[i] && !b[i])
			return 0;
	return 1;
}

static int output_right(void)
{
	static float h[N];
	CK(cudaMemcpy(h, d_y, sizeof h, cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i += 4099)
		if (h[i] != expect * (float)(i % 7)) {
			printf("  output differs at %d: %g, want %g\n", i, h[i], expect * (float)(i % 7));
			return 0;
		}
	return 1;
}

static void eager(unsigned char *on)
{
	smid<<<BLOCKS, 64, 0, s>>>(d_sm);
	CK(cudaStreamSynchronize(s));
	printf("  eager probe: %d SMs\n", seen(on));
}

static void move(const char *carve, const char *tpcs, unsigned char *on)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s set -p %d -t %s", carve, getpid(), tpcs);
	int ok = system(cmd) == 0;
	verdict(ok, "carve set");
	if (!ok)
		exit(1);
	eager(on);
}

/* replay launches e and checks its probe ran within want and off not */
static void replay(CUgraphExec e, float a, const unsigned char *want, const unsigned char *not_, const char *what)
{
	unsigned char on[256];
	CK(cuGraphLaunch(e, (CUstream)s));
	CK(cudaStreamSynchronize(s));
	expect += a;
	int n = seen(on), in = subset(on, want), off = 1;
	for (int i = 0; not_ && i < 256; i++)
		off &= !(on[i] && not_[i] && !want[i]);
	char line[256];
	snprintf(line, sizeof line, "%s: %d SMs, %s, output %s", what, n,
		 in && off ? "on the current TPCs" : "OFF the current TPCs", output_right() ? "right" : "WRONG");
	verdict(in && off && output_right(), line);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: follow CARVE TPCS_B TPCS_C\n");
		return 2;
	}
	const char *carve = argv[1];
	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&d_sm, BLOCKS * sizeof(unsigned)));
	CK(cudaMalloc(&d_x, N * sizeof(float)));
	CK(cudaMalloc(&d_y, N * sizeof(float)));
	static float hx[N];
	for (int i = 0; i < N; i++)
		hx[i] = (float)(i % 7);
	CK(cudaMemcpy(d_x, hx, sizeof hx, cudaMemcpyHostToDevice));
	CK(cudaMemset(d_y, 0, N * sizeof(float)));

	unsigned char a[256], b[256], c[256];
	eager(a);
	cudaGraph_t g;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	smid<<<BLOCKS, 64, 0, s>>>(d_sm);
	saxpy<<<N / 256, 256, 0, s>>>(d_y, d_x, 2.f, N);
	CK(cudaStreamEndCapture(s, &g));
	CUgraphExec e;
	CK(cuGraphInstantiate(&e, (CUgraph)g, 0));
	/* the saxpy node, kept for a change after the move */
	size_t n = 0;
	CK(cuGraphGetNodes((CUgraph)g, NULL, &n));
	CUgraphNode nodes[8], sax = NULL;
	CK(cuGraphGetNodes((CUgraph)g, nodes, &n));
	for (size_t i = 0; i < n; i++) {
		CUDA_KERNEL_NODE_PARAMS p;
		CUgraphNodeType t;
		CK(cuGraphNodeGetType(nodes[i], &t));
		if (t == CU_GRAPH_NODE_TYPE_KERNEL && cuGraphKernelNodeGetParams(nodes[i], &p) == 0 &&
		    p.gridDimX == N / 256)
			sax = nodes[i];
	}
	if (!sax) {
		verdict(0, "the saxpy node found");
		return 1;
	}
	replay(e, 2.f, a, NULL, "replay before any move");

	move(carve, argv[2], b);
	replay(e, 2.f, b, a, "first replay after carve set");
	replay(e, 2.f, b, a, "second replay after carve set");
	CUDA_KERNEL_NODE_PARAMS p;
	CK(cuGraphKernelNodeGetParams(sax, &p));
	float three = 3.f;
	void *args[4] = {p.kernelParams[0], p.kernelParams[1], &three, p.kernelParams[3]};
	p.kernelParams = args;
	CK(cuGraphExecKernelNodeSetParams(e, sax, &p));
	replay(e, 3.f, b, a, "replay after cuGraphExecKernelNodeSetParams (a = 3)");
	CK(cudaGraphDestroy(g)); /* as PyTorch, after instantiating: the shim's clone remains */
	move(carve, argv[3], c);
	replay(e, 3.f, c, b, "replay after a second carve set, its graph destroyed");

	/* cost: a graph of 400 kernel nodes, plain replays and first replays after a move */
	const int kernels = 400, reps = 20, moves = 6;
	float *d_t;
	CK(cudaMalloc(&d_t, 132 * sizeof(float)));
	cudaGraph_t big;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	for (int i = 0; i < kernels; i++)
		tiny<<<132, 32, 0, s>>>(d_t);
	CK(cudaStreamEndCapture(s, &big));
	CUgraphExec be;
	CK(cuGraphInstantiate(&be, (CUgraph)big, 0));
	CK(cudaGraphDestroy(big));
	CK(cuGraphLaunch(be, (CUstream)s));
	CK(cudaStreamSynchronize(s));
	double t0 = now_us();
	for (int r = 0; r < reps; r++) {
		CK(cuGraphLaunch(be, (CUstream)s));
		CK(cudaStreamSynchronize(s));
	}
	double plain = (now_us() - t0) / reps, first = 0, call = 0;
	for (int m = 0; m < moves; m++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, "%s set -p %d -t %s >/dev/null", carve, getpid(), argv[2 + m % 2]);
		if (system(cmd) != 0) {
			verdict(0, "carve set for the cost");
			return 1;
		}
		double t1 = now_us();
		CK(cuGraphLaunch(be, (CUstream)s));
		double t2 = now_us();
		CK(cudaStreamSynchronize(s));
		first += now_us() - t1;
		call += t2 - t1;
	}
	printf("cost, %d-node graph: plain replay %.1f us (mean of %d); first replay after a move %.1f us, "
	       "its launch call %.1f us (mean of %d)\n", kernels, plain, reps, first / moves, call / moves, moves);
	printf("%s\n", failed ? "FAIL graphs follow carve set" : "PASS graphs follow carve set");
	return failed;
}
