// remask.cu: does an instantiated CUDA graph follow its process's new TPC
// mask, and which driver call makes it? Run under carve run -t A; it moves
// itself with carve set (the carve binary is its first argument) and after
// each way of touching the graph replays it, recording the SMs an SM-id
// probe node ran on and checking a saxpy node's output. It also times each
// way on a graph of many kernel nodes, as a served model's graph has.
// Usage: carve run -t 0-7 -- remask CARVE TPCS_B TPCS_C TPCS_D
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

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* sms: which SMs the last probe ran on, as a string of its count and ids */
static int sms(char *buf, size_t len, unsigned char *seen)
{
	static unsigned h[BLOCKS];
	CK(cudaMemcpy(h, d_sm, sizeof h, cudaMemcpyDeviceToHost));
	memset(seen, 0, 256);
	for (int i = 0; i < BLOCKS; i++)
		seen[h[i] & 255] = 1;
	int n = 0, o = 0;
	o += snprintf(buf + o, len - o, "{");
	for (int i = 0; i < 256; i++)
		if (seen[i]) {
			n++;
			if (n <= 12)
				o += snprintf(buf + o, len - o, "%s%d", n > 1 ? "," : "", i);
		}
	snprintf(buf + o, len - o, "%s} %d SMs", n > 12 ? ",..." : "", n);
	return n;
}

static unsigned char eager_old[256], eager_new[256];
static int ytrue = 1; /* y's values match the count of saxpy runs */
static int runs;

static void check_y(void)
{
	static float h[N];
	CK(cudaMemcpy(h, d_y, sizeof h, cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i += 4099)
		if (h[i] != (float)runs * 2.f * (float)(i % 7)) {
			ytrue = 0;
			printf("  output differs at %d: %g, want %g\n", i, h[i], (float)runs * 2.f * (float)(i % 7));
			return;
		}
}

static const char *which(const unsigned char *seen, const unsigned char *a, const unsigned char *b)
{
	int ina = 1, inb = 1;
	for (int i = 0; i < 256; i++)
		if (seen[i]) {
			ina &= a[i];
			inb &= b[i];
		}
	return ina && inb ? "both" : ina ? "OLD mask" : inb ? "NEW mask" : "neither";
}

static void replay(const char *what, CUgraphExec e)
{
	unsigned char seen[256];
	char buf[256];
	CK(cuGraphLaunch(e, (CUstream)s));
	CK(cudaStreamSynchronize(s));
	runs++;
	sms(buf, sizeof buf, seen);
	check_y();
	printf("  %-44s %-28s %s, output %s\n", what, buf, which(seen, eager_old, eager_new), ytrue ? "right" : "WRONG");
}

static void eager(const char *what, unsigned char *into)
{
	char buf[256];
	smid<<<BLOCKS, 64, 0, s>>>(d_sm);
	CK(cudaStreamSynchronize(s));
	sms(buf, sizeof buf, into);
	printf("  %-44s %s\n", what, buf);
}

static void move(const char *carve, const char *tpcs)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s set -p %d -t %s", carve, getpid(), tpcs);
	printf("carve set -t %s: %s\n", tpcs, system(cmd) == 0 ? "ok" : "FAILED");
	memcpy(eager_old, eager_new, 256);
	eager("eager probe after the move", eager_new);
}

static CUgraph capture(void)
{
	cudaGraph_t g;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	smid<<<BLOCKS, 64, 0, s>>>(d_sm);
	saxpy<<<N / 256, 256, 0, s>>>(d_y, d_x, 2.f, N);
	CK(cudaStreamEndCapture(s, &g));
	return (CUgraph)g;
}

static void set_all(CUgraphExec e, CUgraph g)
{
	size_t n = 0;
	CK(cuGraphGetNodes(g, NULL, &n));
	CUgraphNode *nodes = (CUgraphNode *)calloc(n, sizeof *nodes);
	CK(cuGraphGetNodes(g, nodes, &n));
	for (size_t i = 0; i < n; i++) {
		CUgraphNodeType t;
		CK(cuGraphNodeGetType(nodes[i], &t));
		if (t != CU_GRAPH_NODE_TYPE_KERNEL)
			continue;
		CUDA_KERNEL_NODE_PARAMS p;
		CK(cuGraphKernelNodeGetParams(nodes[i], &p));
		CK(cuGraphExecKernelNodeSetParams(e, nodes[i], &p));
	}
	free(nodes);
}

static void update(CUgraphExec e, CUgraph g)
{
	CUgraphExecUpdateResultInfo info;
	CK(cuGraphExecUpdate(e, g, &info));
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: remask CARVE TPCS_B TPCS_C TPCS_D\n");
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

	eager("eager probe, the first mask", eager_new);
	CUgraph g = capture();
	CUgraphExec e;
	CK(cuGraphInstantiate(&e, g, 0));
	memcpy(eager_old, eager_new, 256);
	replay("replay, before any move", e);

	move(carve, argv[2]);
	replay("plain replay", e);
	CK(cuGraphUpload(e, (CUstream)s));
	replay("after cuGraphUpload", e);
	set_all(e, g);
	replay("after cuGraphExecKernelNodeSetParams (own)", e);

	move(carve, argv[3]);
	update(e, g);
	replay("after cuGraphExecUpdate (its own graph)", e);

	/* the graph PyTorch destroys after instantiating: a clone taken before */
	CUgraph g2 = capture(), c2;
	CUgraphExec e2;
	CK(cuGraphInstantiate(&e2, g2, 0));
	CK(cuGraphClone(&c2, g2));
	CK(cuGraphDestroy(g2));
	replay("second graph, instantiated on this mask", e2);
	move(carve, argv[4]);
	replay("second graph, plain replay", e2);
	update(e2, c2);
	replay("second graph, cuGraphExecUpdate from a clone", e2);
	CUgraphExec e3;
	CK(cuGraphInstantiate(&e3, c2, 0));
	replay("a new instantiation of the clone", e3);

	/* cost on a graph of many kernel nodes */
	const int nodes = 400;
	float *d_t;
	CK(cudaMalloc(&d_t, 132 * sizeof(float)));
	cudaGraph_t big;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	for (int i = 0; i < nodes; i++)
		tiny<<<132, 32, 0, s>>>(d_t);
	CK(cudaStreamEndCapture(s, &big));
	CUgraphExec be;
	CK(cuGraphInstantiate(&be, (CUgraph)big, 0));
	CK(cuGraphLaunch(be, (CUstream)s));
	CK(cudaStreamSynchronize(s));
	const char *names[] = {"replay alone", "cuGraphUpload", "SetParams x all", "cuGraphExecUpdate", "instantiate anew"};
	for (int way = 0; way < 5; way++) {
		double t0 = now_us(), ttouch = 0;
		const int reps = 20;
		for (int r = 0; r < reps; r++) {
			double a = now_us();
			CUgraphExec x = be;
			if (way == 1)
				CK(cuGraphUpload(be, (CUstream)s));
			if (way == 2)
				set_all(be, (CUgraph)big);
			if (way == 3)
				update(be, (CUgraph)big);
			if (way == 4)
				CK(cuGraphInstantiate(&x, (CUgraph)big, 0));
			ttouch += now_us() - a;
			CK(cuGraphLaunch(x, (CUstream)s));
			CK(cudaStreamSynchronize(s));
			if (way == 4)
				CK(cuGraphExecDestroy(x));
		}
		printf("cost, %d-node graph, %-18s touch %8.1f us, touch+replay %8.1f us (mean of %d)\n", nodes, names[way],
		       ttouch / reps, (now_us() - t0) / reps, reps);
	}
	printf("output %s after %d replays\n", ytrue ? "right" : "WRONG", runs);
	return 0;
}
