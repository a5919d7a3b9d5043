/*
 * graphs.c: the driver program's graphs of kernel nodes, made and changed
 * as a framework does, and what the fake says their replays ran. Graphs
 * are numbered from 0 in the order made. Its commands:
 *
 *   grmake K [mem] [drop] [device]
 *                      a graph of K kernel nodes (1-32), node i's value
 *                      100 + i, with a memory allocation and free node
 *                      with mem, instantiated (cuGraphInstantiate, for
 *                      device launch with device); with drop its graph is
 *                      destroyed then, as PyTorch does -> "graph N" or
 *                      "rc R"
 *   grlaunch N [upload]
 *                      a launch of graph N (after cuGraphUpload with
 *                      upload) -> "ran K mask W0 W1 W2 W3 values V,V,...":
 *                      the kernel nodes the fake ran, their one mask (or
 *                      "mask mixed") and their values; or "rc R"
 *   grset N I V        cuGraphExecKernelNodeSetParams: graph N's node I
 *                      takes value V -> "rc R"
 *   grupdate N D       cuGraphExecUpdate from a graph of the same shape
 *                      whose values are graph N's own plus D -> "rc R"
 *   grdel N            cuGraphExecDestroy of graph N (and cuGraphDestroy
 *                      of its graph, unless dropped) -> "rc R"
 *   grcount            -> "graphs G execs E inst I": the fake's graphs and
 *                      executable graphs alive and its instantiations
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"

struct kparams { /* CUDA_KERNEL_NODE_PARAMS */
	CUfunction func;
	unsigned gx, gy, gz, bx, by, bz, shared;
	void **params, **extra;
};

#define GRAPHS 64
#define NODES 32
static struct {
	CUgraph g; /* NULL once dropped */
	CUgraphExec e;
	CUgraphNode nodes[NODES];
	uint64_t values[NODES];
	int k;
} graphs[GRAPHS];
static int ngraphs;

/* add_kernel adds a kernel node of value v to g. */
static CUresult add_kernel(CUgraph g, uint64_t v, CUgraphNode *out)
{
	void *args[1] = {&v};
	struct kparams p = {(CUfunction)(uintptr_t)0x777, 1, 1, 1, 32, 1, 1, 0, args, NULL};
	return ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const struct kparams *))proc(
	    "cuGraphAddKernelNode", 0))(out, g, NULL, 0, &p);
}

/* make_graph makes a graph of k kernel nodes of values[], with memory
 * nodes if mem. */
static CUresult make_graph(CUgraph *g, CUgraphNode *nodes, const uint64_t *values, int k, int mem)
{
	CUresult r = ((CUresult(*)(CUgraph *, unsigned))proc("cuGraphCreate", 0))(g, 0);
	for (int i = 0; i < k && !r; i++)
		r = add_kernel(*g, values[i], &nodes[i]);
	if (mem && !r) {
		uint64_t params[16] = {0};
		uint64_t bytes = 1 << 20;
		memcpy((char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, &bytes, sizeof bytes);
		CUgraphNode a, f;
		r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, void *))proc(
		    "cuGraphAddMemAllocNode", 0))(&a, *g, NULL, 0, params);
		CUdeviceptr d;
		memcpy(&d, (char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, sizeof d);
		if (!r)
			r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr))proc(
			    "cuGraphAddMemFreeNode", 0))(&f, *g, &a, 1, d);
	}
	return r;
}

static CUresult graph_destroy(CUgraph g)
{
	return ((CUresult(*)(CUgraph))proc("cuGraphDestroy", 0))(g);
}

/* one_kernel_graph: a graph of one kernel node instantiated and launched
 * on the default stream, then destroyed: klaunch graph (launch.c). */
CUresult one_kernel_graph(int ptds)
{
	CUgraph g = NULL;
	CUgraphNode n;
	CUgraphExec e = NULL;
	uint64_t v = 1;
	CUresult r = make_graph(&g, &n, &v, 1, 0);
	if (!r)
		r = ((CUresult(*)(CUgraphExec *, CUgraph, unsigned long long))proc("cuGraphInstantiate", 0))(&e, g, 0);
	if (!r)
		r = ((CUresult(*)(CUgraphExec, CUstream))proc("cuGraphLaunch", ptds))(e, 0);
	if (e)
		((CUresult(*)(CUgraphExec))proc("cuGraphExecDestroy", 0))(e);
	if (g)
		graph_destroy(g);
	return r;
}

static void replay(void)
{
	int (*rp)(uint64_t *, uint32_t(*)[4], int) = (int (*)(uint64_t *, uint32_t(*)[4], int))dlsym(h, "fakecuda_replay");
	uint64_t values[64];
	uint32_t masks[64][4];
	int n = rp(values, masks, 64);
	int same = 1;
	for (int i = 1; i < n; i++)
		same &= memcmp(masks[i], masks[0], sizeof masks[0]) == 0;
	printf("ran %d ", n);
	if (!n || !same)
		printf("mask mixed");
	else
		printf("mask %08x %08x %08x %08x", masks[0][0], masks[0][1], masks[0][2], masks[0][3]);
	printf(" values ");
	for (int i = 0; i < n; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)values[i]);
	printf("\n");
}

int graph_command(char *line)
{
	int n = -1, k = 0, i = 0;
	unsigned long long v = 0;
	char a[16] = "", b[16] = "", d[16] = "";
	if (sscanf(line, "grmake %d %15s %15s %15s", &k, a, b, d) >= 1) {
		if (k < 1 || k > NODES || ngraphs == GRAPHS) {
			printf("rc 1\n");
			return 1;
		}
		const char *words[3] = {a, b, d};
		int mem = 0, drop = 0, device = 0;
		for (i = 0; i < 3; i++)
			mem |= !strcmp(words[i], "mem"), drop |= !strcmp(words[i], "drop"), device |= !strcmp(words[i], "device");
		unsigned long long flags = device ? CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH : 0;
		n = ngraphs;
		graphs[n].k = k;
		for (i = 0; i < k; i++)
			graphs[n].values[i] = 100 + (uint64_t)i;
		CUresult r = make_graph(&graphs[n].g, graphs[n].nodes, graphs[n].values, k, mem);
		if (!r)
			r = ((CUresult(*)(CUgraphExec *, CUgraph, unsigned long long))proc("cuGraphInstantiate", 0))(
			    &graphs[n].e, graphs[n].g, flags);
		if (r) {
			printf("rc %d\n", r);
			return 1;
		}
		if (drop) {
			graph_destroy(graphs[n].g);
			graphs[n].g = NULL;
		}
		ngraphs++;
		printf("graph %d\n", n);
	} else if (sscanf(line, "grlaunch %d %15s", &n, a) >= 1) {
		if (n < 0 || n >= ngraphs) {
			printf("rc 1\n");
			return 1;
		}
		CUresult r = 0;
		if (!strcmp(a, "upload"))
			r = ((CUresult(*)(CUgraphExec, CUstream))proc("cuGraphUpload", 0))(graphs[n].e, 0);
		if (!r)
			r = ((CUresult(*)(CUgraphExec, CUstream))proc("cuGraphLaunch", 0))(graphs[n].e, 0);
		if (r)
			printf("rc %d\n", r);
		else
			replay();
	} else if (sscanf(line, "grset %d %d %llu", &n, &i, &v) == 3) {
		if (n < 0 || n >= ngraphs || i < 0 || i >= graphs[n].k) {
			printf("rc 1\n");
			return 1;
		}
		uint64_t val = v;
		void *args[1] = {&val};
		struct kparams p = {(CUfunction)(uintptr_t)0x777, 1, 1, 1, 32, 1, 1, 0, args, NULL};
		CUresult r = ((CUresult(*)(CUgraphExec, CUgraphNode, const struct kparams *))proc(
		    "cuGraphExecKernelNodeSetParams", 0))(graphs[n].e, graphs[n].nodes[i], &p);
		if (!r)
			graphs[n].values[i] = val;
		printf("rc %d\n", r);
	} else if (sscanf(line, "grupdate %d %llu", &n, &v) == 2) {
		if (n < 0 || n >= ngraphs) {
			printf("rc 1\n");
			return 1;
		}
		uint64_t values[NODES];
		CUgraphNode nodes[NODES];
		for (i = 0; i < graphs[n].k; i++)
			values[i] = graphs[n].values[i] + v;
		CUgraph g = NULL;
		CUresult r = make_graph(&g, nodes, values, graphs[n].k, 0);
		struct {
			int result;
			CUgraphNode err, from;
		} info;
		if (!r)
			r = ((CUresult(*)(CUgraphExec, CUgraph, void *))proc("cuGraphExecUpdate", 0))(graphs[n].e, g, &info);
		if (!r)
			memcpy(graphs[n].values, values, sizeof values);
		if (g)
			graph_destroy(g);
		printf("rc %d\n", r);
	} else if (sscanf(line, "grdel %d", &n) == 1) {
		if (n < 0 || n >= ngraphs || !graphs[n].e) {
			printf("rc 1\n");
			return 1;
		}
		CUresult r = ((CUresult(*)(CUgraphExec))proc("cuGraphExecDestroy", 0))(graphs[n].e);
		graphs[n].e = NULL;
		if (graphs[n].g && !r)
			r = graph_destroy(graphs[n].g);
		graphs[n].g = NULL;
		printf("rc %d\n", r);
	} else if (strcmp(line, "grcount") == 0) {
		void (*count)(int *) = (void (*)(int *))dlsym(h, "fakecuda_graphs");
		int c[3];
		count(c);
		printf("graphs %d execs %d inst %d\n", c[0], c[1], c[2]);
	} else {
		return 0;
	}
	return 1;
}
