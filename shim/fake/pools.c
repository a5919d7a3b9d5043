/*
 * pools.c: the fake driver's stream-ordered memory and graphs' memory.
 * Pools (each device's default one, and those made) grow by 2 MiB and
 * keep what is freed up to their release threshold, given back at a
 * synchronization (streams.c) or by a trim; a pool of host memory takes
 * none of the GPU's. Graphs hold memory allocation nodes, added or
 * captured from cuMemAllocAsync on a capturing stream, and the device's
 * graph memory reserves what an executable graph's nodes take when it is
 * launched (graphs.c) or uploaded.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake.h"

/* --- pools --------------------------------------------------------------------- */

struct fpool {
	uint64_t reserved, used, threshold;
	int host; /* a pool of host memory: takes none of the GPU's */
};
#define FPOOLS 64
static struct fpool default_pool[2];
static struct fpool *device_pool[2] = {&default_pool[0], &default_pool[1]};
static struct fpool *fpools[FPOOLS] = {&default_pool[0], &default_pool[1]};

static int pool_alloc(struct fpool *p, uint64_t n, uint64_t *out) /* mem_mu held */
{
	uint64_t slack = p->reserved - p->used;
	if (slack < n) {
		uint64_t grow = round_up(n - slack, GRAIN);
		if (!p->host && !take(grow))
			return CUDA_ERROR_OUT_OF_MEMORY;
		p->reserved += grow;
	}
	p->used += n;
	*out = new_va(n, 0);
	fmap_put((struct fentry){.key = *out, .size = n, .owner = p, .kind = F_POOLED});
	return 0;
}

/* pool_keep gives back what p reserves beyond keep and what is in use. */
static void pool_keep(struct fpool *p, uint64_t keep) /* mem_mu held */
{
	uint64_t target = round_up(keep > p->used ? keep : p->used, GRAIN);
	if (p->reserved > target) {
		if (!p->host)
			give(p->reserved - target);
		p->reserved = target;
	}
}

/* At a synchronization each pool gives back what it holds beyond its
 * release threshold. */
void mem_synced(void)
{
	pthread_mutex_lock(&mem_mu);
	for (int i = 0; i < FPOOLS; i++)
		if (fpools[i] && fpools[i]->reserved > fpools[i]->threshold)
			pool_keep(fpools[i], fpools[i]->threshold);
	pthread_mutex_unlock(&mem_mu);
}

static int async_alloc(struct fpool *p, CUdeviceptr *d, size_t n, CUstream s)
{
	if (error())
		return error();
	pthread_mutex_lock(&mem_mu);
	struct fstream *f = stream_of(s);
	int r = 0;
	uint64_t v = 0;
	if (f->capturing && f->cap) { /* a node of the graph, not memory now */
		v = new_va(n, 0);
		if (!graph_add(f->cap, CU_GRAPH_NODE_TYPE_MEM_ALLOC, n, v))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		r = pool_alloc(p, n, &v);
	}
	pthread_mutex_unlock(&mem_mu);
	if (!r)
		*d = v;
	return r;
}

int cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s)
{
	return async_alloc(device_pool[current_device()], d, n, s);
}

int cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s)
{
	return async_alloc((struct fpool *)pool, d, n, s);
}

int cuMemFreeAsync(CUdeviceptr d, CUstream s)
{
	pthread_mutex_lock(&mem_mu);
	struct fstream *f = stream_of(s);
	int r = 0;
	struct fentry *e;
	if (f->capturing && f->cap) {
		graph_add(f->cap, CU_GRAPH_NODE_TYPE_MEM_FREE, 0, d);
	} else if ((e = fmap_find(d)) && e->kind == F_POOLED) {
		((struct fpool *)e->owner)->used -= e->size;
		fmap_erase(e);
	} else if (e && e->kind == F_PLAIN) {
		give(e->size);
		fmap_erase(e);
	} else {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&mem_mu);
	return r;
}

int cuMemPoolCreate(CUmemoryPool *pool, const void *props)
{
	int type;
	memcpy(&type, (const char *)props + CU_MEM_PROPS_LOCATION_TYPE_OFFSET, sizeof type);
	struct fpool *p = calloc(1, sizeof *p);
	p->host = type != CU_MEM_LOCATION_TYPE_DEVICE;
	pthread_mutex_lock(&mem_mu);
	int i = 2;
	while (i < FPOOLS && fpools[i])
		i++;
	if (i < FPOOLS)
		fpools[i] = p;
	pthread_mutex_unlock(&mem_mu);
	if (i == FPOOLS) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pool = p;
	return 0;
}

int cuMemPoolDestroy(CUmemoryPool pool)
{
	struct fpool *p = pool;
	pthread_mutex_lock(&mem_mu);
	for (int i = 2; i < FPOOLS; i++)
		if (fpools[i] == p)
			fpools[i] = NULL;
	for (int d = 0; d < 2; d++)
		if (device_pool[d] == p)
			device_pool[d] = &default_pool[d];
	if (!p->host)
		give(p->reserved);
	pthread_mutex_unlock(&mem_mu);
	free(p);
	return 0;
}

int cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	pthread_mutex_lock(&mem_mu);
	pool_keep(pool, keep);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value)
{
	if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
		return 0;
	pthread_mutex_lock(&mem_mu);
	((struct fpool *)pool)->threshold = *(uint64_t *)value;
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value)
{
	struct fpool *p = pool;
	pthread_mutex_lock(&mem_mu);
	uint64_t v = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ? p->threshold
		     : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? p->reserved
		     : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ? p->used
								  : 0;
	pthread_mutex_unlock(&mem_mu);
	*(uint64_t *)value = v;
	return 0;
}

int cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	if (dev < 0 || dev > 1)
		return 101;
	*pool = &default_pool[dev];
	return 0;
}

int cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	if (dev < 0 || dev > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	*pool = device_pool[dev];
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	if (dev < 0 || dev > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	device_pool[dev] = pool;
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

/* --- graphs: allocation nodes, and the memory the device keeps for them ------------ */

/* Each device's graph memory: what it reserves, and what graphs' allocations
 * hold past a launch (none here: every graph frees what it allocates). */
static uint64_t graph_reserved[2], graph_used[2];

int cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params)
{
	(void)deps, (void)n;
	uint64_t bytes;
	memcpy(&bytes, (char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, sizeof bytes);
	pthread_mutex_lock(&mem_mu);
	uint64_t v = new_va(bytes, 0);
	struct fnode *x = graph_add(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC, bytes, v);
	pthread_mutex_unlock(&mem_mu);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy((char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, &v, sizeof v);
	*node = x;
	return 0;
}

int cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d)
{
	(void)deps, (void)n;
	struct fnode *x = graph_add(g, CU_GRAPH_NODE_TYPE_MEM_FREE, 0, d);
	*node = x;
	return x ? 0 : CUDA_ERROR_OUT_OF_MEMORY;
}

int cuGraphMemAllocNodeGetParams(CUgraphNode node, void *params)
{
	struct fnode *x = node;
	memset(params, 0, CU_MEM_ALLOC_NODE_PARAMS_SIZE);
	memcpy((char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, &x->bytes, sizeof x->bytes);
	memcpy((char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, &x->dptr, sizeof x->dptr);
	return 0;
}

uint64_t graph_bytes(const struct fgraph *g)
{
	uint64_t b = 0;
	for (int i = 0; i < g->n; i++)
		b += g->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? g->nodes[i].bytes
		     : g->nodes[i].child                          ? graph_bytes(g->nodes[i].child)
								  : 0;
	return b;
}

/* graph_memory: the device's graph memory grows to hold the graph's. */
int graph_memory(CUgraphExec g)
{
	uint64_t need;
	if (!exec_footprint(g, &need) || error())
		return error();
	int d = current_device(), r = 0;
	pthread_mutex_lock(&mem_mu);
	uint64_t slack = graph_reserved[d] - graph_used[d];
	if (need > slack) {
		uint64_t grow = round_up(need - slack, GRAIN);
		if (take(grow))
			graph_reserved[d] += grow;
		else
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&mem_mu);
	return r;
}

int cuGraphUpload(CUgraphExec g, CUstream s)
{
	(void)s;
	return graph_memory(g);
}

int cuDeviceGetGraphMemAttribute(CUdevice d, int attr, void *value)
{
	if (d < 0 || d > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	*(uint64_t *)value = attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? graph_reserved[d]
			     : attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT   ? graph_used[d]
									    : 0;
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceGraphMemTrim(CUdevice d)
{
	if (d < 0 || d > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	uint64_t keep = round_up(graph_used[d], GRAIN);
	if (graph_reserved[d] > keep) {
		give(graph_reserved[d] - keep);
		graph_reserved[d] = keep;
	}
	pthread_mutex_unlock(&mem_mu);
	return 0;
}
