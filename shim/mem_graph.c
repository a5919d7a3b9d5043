/*
 * mem_graph.c: graphs' device memory (mem.c keeps the account, and each
 * device's record): the device's graph memory
 * (CU_GRAPH_MEM_ATTR_RESERVED_*), read after each launch or upload of a
 * graph and after cuDeviceGraphMemTrim. A graph's allocation nodes are
 * found when it is instantiated (captured allocations are nodes too), and
 * under a limit its launches are charged beforehand, as a pool's
 * allocations, with what the graph memory's free bytes do not cover. An
 * allocation node must fit the limit when it is added.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"


/* fits says whether n more bytes would fit the limit now (a graph's
 * allocation node, which takes its memory at launch). */
static int fits(uint64_t n)
{
	if (!carve_mem_charge_or_refuse(n))
		return 0;
	carve_mem_credit(n);
	return 1;
}

/* footprint: the bytes of g's memory allocation nodes, its child graphs'
 * included. */
static uint64_t footprint(CUgraph g, int depth)
{
	size_t n = 0;
	if (!carve_mem_drv.graph_nodes || !carve_mem_drv.node_type || depth > 8 || carve_mem_drv.graph_nodes(g, NULL, &n) != CUDA_SUCCESS || !n)
		return 0;
	CUgraphNode *nodes = calloc(n, sizeof *nodes);
	if (!nodes)
		return 0;
	uint64_t bytes = 0;
	if (carve_mem_drv.graph_nodes(g, nodes, &n) == CUDA_SUCCESS) {
		for (size_t i = 0; i < n; i++) {
			int type = -1;
			if (carve_mem_drv.node_type(nodes[i], &type) != CUDA_SUCCESS)
				continue;
			if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && carve_mem_drv.alloc_params) {
				uint64_t params[32] = {0}; /* CUDA_MEM_ALLOC_NODE_PARAMS, with room */
				uint64_t size = 0;
				if (carve_mem_drv.alloc_params(nodes[i], params) == CUDA_SUCCESS)
					memcpy(&size, (char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, sizeof size);
				bytes += size;
			} else if (type == CU_GRAPH_NODE_TYPE_GRAPH && carve_mem_drv.child_graph) {
				CUgraph child = NULL;
				if (carve_mem_drv.child_graph(nodes[i], &child) == CUDA_SUCCESS && child)
					bytes += footprint(child, depth + 1);
			}
		}
	}
	free(nodes);
	return bytes;
}

typedef CUresult (*instantiate_fn)(CUgraphExec *, CUgraph, void *, void *, size_t);
typedef CUresult (*exec_fn)(CUgraphExec);
typedef CUresult (*alloc_node_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, void *);
typedef CUresult (*device_fn)(CUdevice);

/* Every flavour of cuGraphInstantiate takes the executable graph's address
 * and the graph first, and at most three more integer or pointer
 * arguments, which pass through untouched. */
CUresult carve_mem_instantiate(void *real, CUgraphExec *e, CUgraph g, void *a, void *b, size_t c)
{
	CUresult r = ((instantiate_fn)real)(e, g, a, b, c);
	if (r != CUDA_SUCCESS || !carve_mem_counting() || !e)
		return r;
	uint64_t bytes = footprint(g, 0);
	if (bytes) {
		struct carve_mem_entry x = {.key = (uint64_t)(uintptr_t)*e, .size = bytes, .kind = MEM_EXEC};
		carve_mem_put(&x);
		__atomic_store_n(&carve_mem_graphs_seen, 1, __ATOMIC_RELEASE);
	}
	return r;
}

CUresult carve_mem_exec_destroy(void *real, CUgraphExec e)
{
	CUresult r = ((exec_fn)real)(e);
	struct carve_mem_entry x;
	if (r == CUDA_SUCCESS && carve_mem_counting())
		carve_mem_take(MEM_EXEC, (uint64_t)(uintptr_t)e, &x);
	return r;
}

/* An allocation node takes its memory when its graph is launched; it must
 * fit the limit now, on its own. */
CUresult carve_mem_alloc_node(void *real, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params)
{
	if (!carve_mem_counting() || !params)
		return ((alloc_node_fn)real)(node, g, deps, n, params);
	uint64_t bytes;
	memcpy(&bytes, (char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, sizeof bytes);
	if (!fits(bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	__atomic_store_n(&carve_mem_graphs_seen, 1, __ATOMIC_RELEASE);
	return ((alloc_node_fn)real)(node, g, deps, n, params);
}

/* carve_mem_graph_before charges what launching (or uploading) e may grow
 * the graph memory of the current device by: its allocation nodes' bytes
 * less the graph memory's free bytes, rounded up as a pool's growth;
 * 0: refused. Under a limit, such launches on a device are made one at a
 * time, as a pool's allocations. carve_mem_graph_after reads the graph
 * memory after the launch, when a graph has ever had memory. */
int carve_mem_graph_before(CUgraphExec e, struct carve_graph_launch *l)
{
	memset(l, 0, sizeof *l);
	if (!carve_mem_counting() || !__atomic_load_n(&carve_mem_graphs_seen, __ATOMIC_ACQUIRE))
		return 1;
	l->device = carve_mem_device();
	l->seen = 1;
	struct carve_mem_entry x;
	struct carve_mem_gdev *g = carve_mem_gdev_of(l->device);
	if (!g || !carve_mem_limit() || !carve_mem_get(MEM_EXEC, (uint64_t)(uintptr_t)e, &x))
		return 1;
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&g->mu);
		uint64_t r = carve_mem_graph_attr(l->device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
		uint64_t u = carve_mem_graph_attr(l->device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
		uint64_t slack = r > u ? r - u : 0;
		uint64_t need = x.size > slack ? (x.size - slack + CARVE_MEM_GRAIN - 1) & ~(CARVE_MEM_GRAIN - 1) : 0;
		if (carve_mem_charge(need)) {
			l->pre = need;
			l->locked = 1;
			return 1;
		}
		pthread_mutex_unlock(&g->mu);
		if (tries) {
			carve_mem_refused(need);
			l->seen = 0;
			return 0;
		}
		carve_mem_reclaim();
	}
}

void carve_mem_graph_after(const struct carve_graph_launch *l)
{
	struct carve_mem_gdev *g;
	if (!l->seen || !(g = carve_mem_gdev_of(l->device)))
		return;
	if (!l->locked)
		pthread_mutex_lock(&g->mu);
	carve_mem_graph_commit(l->device, g, l->pre);
	pthread_mutex_unlock(&g->mu);
}

CUresult carve_mem_graph_trim(void *real, CUdevice d)
{
	struct carve_mem_gdev *g;
	if (!carve_mem_counting() || !(g = carve_mem_gdev_of(d)))
		return ((device_fn)real)(d);
	pthread_mutex_lock(&g->mu);
	CUresult r = ((device_fn)real)(d);
	carve_mem_graph_commit(d, g, 0);
	pthread_mutex_unlock(&g->mu);
	return r;
}
