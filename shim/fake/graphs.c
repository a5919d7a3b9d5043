/*
 * graphs.c: the fake driver's graphs as the hardware runs them. A graph
 * holds kernel nodes, child graph nodes and memory nodes (pools.c adds
 * those and keeps the graph memory); cuGraphClone copies one, and
 * cuGraphNodeFindInClone finds a node's copy. Instantiating a graph writes
 * the descriptor of each of its kernel nodes (its child graphs' included)
 * and calls the launch callback with it then, once, as the driver does: a
 * launch of the executable graph runs its kernel nodes on the descriptors
 * written at instantiation, with no callback, so a replay keeps the mask
 * its graph was instantiated under. cuGraphExecKernelNodeSetParams and
 * cuGraphExecUpdate change the nodes' values, never their descriptors. A
 * kernel node's value is its first parameter (fake.h). Test entry points
 * count the graphs and executable graphs alive and the instantiations
 * (fakecuda_graphs) and say what the last replay's kernel nodes ran with
 * (fakecuda_replay).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake.h"

#define GRAPH_MAGIC 0x46475248u
#define EXEC_MAGIC 0x46455845u

struct fexec_node { /* a kernel node of an executable graph */
	CUgraphNode key, alt; /* its node in the graph instantiated, and in the last one it was updated from */
	CUfunction fn;
	unsigned gx;
	uint64_t value;
	int called; /* a callback saw its descriptor */
	uint8_t tmd[FAKE_TMD];
};
struct fexec {
	uint32_t magic;
	uint64_t footprint;
	unsigned long long flags;
	int n;
	struct fexec_node nodes[FAKE_NODES];
};

static int graphs_alive, execs_alive, instantiations;

struct fgraph *graph_new(void)
{
	struct fgraph *g = calloc(1, sizeof *g);
	g->magic = GRAPH_MAGIC;
	__atomic_add_fetch(&graphs_alive, 1, __ATOMIC_RELAXED);
	return g;
}

struct fnode *graph_add(struct fgraph *g, int type, uint64_t bytes, uint64_t dptr)
{
	if (g->n == FAKE_NODES)
		return NULL;
	struct fnode *n = &g->nodes[g->n++];
	n->type = type, n->bytes = bytes, n->dptr = dptr;
	return n;
}

static int is_graph(CUgraph g)
{
	return (uintptr_t)g > 0x10000 && ((struct fgraph *)g)->magic == GRAPH_MAGIC;
}

static int is_exec(CUgraphExec g)
{
	return (uintptr_t)g > 0x10000 && ((struct fexec *)g)->magic == EXEC_MAGIC;
}

int exec_footprint(CUgraphExec e, uint64_t *bytes)
{
	if (!is_exec(e))
		return 0;
	*bytes = ((struct fexec *)e)->footprint;
	return 1;
}

int cuGraphCreate(CUgraph *g, unsigned flags)
{
	(void)flags;
	*g = graph_new();
	return 0;
}

int cuGraphDestroy(CUgraph g)
{
	if (!is_graph(g))
		return CUDA_ERROR_INVALID_VALUE;
	((struct fgraph *)g)->magic = 0;
	free(g);
	__atomic_sub_fetch(&graphs_alive, 1, __ATOMIC_RELAXED);
	return 0;
}

/* --- nodes ------------------------------------------------------------------ */

static uint64_t value_of(const struct fake_kernel_params *p)
{
	uint64_t v = 0;
	if (p->kernelParams && p->kernelParams[0])
		memcpy(&v, p->kernelParams[0], sizeof v);
	return v;
}

int cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
			 const struct fake_kernel_params *p)
{
	(void)deps, (void)n;
	if (!is_graph(g) || !p)
		return CUDA_ERROR_INVALID_VALUE;
	struct fnode *x = graph_add(g, CU_GRAPH_NODE_TYPE_KERNEL, 0, 0);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->fn = p->func, x->gx = p->gridDimX, x->value = value_of(p);
	*node = x;
	return 0;
}

int cuGraphKernelNodeSetParams(CUgraphNode node, const struct fake_kernel_params *p)
{
	struct fnode *x = node;
	if (!x || !p || x->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	x->fn = p->func, x->gx = p->gridDimX, x->value = value_of(p);
	return 0;
}

int cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child)
{
	(void)deps, (void)n;
	struct fnode *x = graph_add(g, CU_GRAPH_NODE_TYPE_GRAPH, 0, 0);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->child = child;
	*node = x;
	return 0;
}

int cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *n)
{
	struct fgraph *g = graph;
	if (nodes) {
		size_t k = *n < (size_t)g->n ? *n : (size_t)g->n;
		for (size_t i = 0; i < k; i++)
			nodes[i] = &g->nodes[i];
		*n = k;
	} else {
		*n = (size_t)g->n;
	}
	return 0;
}

int cuGraphNodeGetType(CUgraphNode node, int *type)
{
	*type = ((struct fnode *)node)->type;
	return 0;
}

int cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *g)
{
	*g = ((struct fnode *)node)->child;
	return 0;
}

/* cuGraphClone copies g's nodes; a child graph node's copy names the same
 * child graph. */
int cuGraphClone(CUgraph *out, CUgraph g)
{
	if (!is_graph(g) || !out)
		return CUDA_ERROR_INVALID_VALUE;
	struct fgraph *c = graph_new(), *src = g;
	c->n = src->n;
	for (int i = 0; i < src->n; i++) {
		c->nodes[i] = src->nodes[i];
		c->nodes[i].origin = &src->nodes[i];
	}
	*out = c;
	return 0;
}

int cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode orig, CUgraph clone)
{
	if (!is_graph(clone) || !out)
		return CUDA_ERROR_INVALID_VALUE;
	struct fgraph *c = clone;
	for (int i = 0; i < c->n; i++)
		if (c->nodes[i].origin == orig) {
			*out = &c->nodes[i];
			return 0;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

/* --- executable graphs --------------------------------------------------------- */

/* instantiate_nodes writes the descriptors of g's kernel nodes, its child
 * graphs' included, into x, each seen by the launch callback now. */
static int instantiate_nodes(struct fexec *x, const struct fgraph *g, int depth)
{
	for (int i = 0; i < g->n; i++) {
		const struct fnode *n = &g->nodes[i];
		if (n->type == CU_GRAPH_NODE_TYPE_GRAPH && n->child && depth < 8) {
			if (instantiate_nodes(x, n->child, depth + 1))
				return CUDA_ERROR_OUT_OF_MEMORY;
			continue;
		}
		if (n->type != CU_GRAPH_NODE_TYPE_KERNEL)
			continue;
		if (x->n == FAKE_NODES)
			return CUDA_ERROR_OUT_OF_MEMORY;
		struct fexec_node *e = &x->nodes[x->n++];
		e->key = e->alt = (CUgraphNode)n;
		e->fn = n->fn, e->gx = n->gx, e->value = n->value;
		e->called = fake_descriptor(CARVE_TMD_V_HOPPER, n->fn, n->gx, e->tmd);
	}
	return 0;
}

int cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
	if (error())
		return error();
	if (!is_graph(g) || !e)
		return CUDA_ERROR_INVALID_VALUE;
	struct fexec *x = calloc(1, sizeof *x);
	x->magic = EXEC_MAGIC;
	x->flags = flags;
	x->footprint = graph_bytes(g);
	int r = instantiate_nodes(x, g, 0);
	if (r) {
		free(x);
		return r;
	}
	__atomic_add_fetch(&execs_alive, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&instantiations, 1, __ATOMIC_RELAXED);
	*e = x;
	return 0;
}

int cuGraphExecDestroy(CUgraphExec e)
{
	if (!is_exec(e))
		return CUDA_ERROR_INVALID_VALUE;
	((struct fexec *)e)->magic = 0;
	free(e);
	__atomic_sub_fetch(&execs_alive, 1, __ATOMIC_RELAXED);
	return 0;
}

static struct fexec_node *exec_node(CUgraphExec e, CUgraphNode node)
{
	if (!is_exec(e))
		return NULL;
	struct fexec *x = e;
	for (int i = 0; i < x->n; i++)
		if (x->nodes[i].key == node || x->nodes[i].alt == node)
			return &x->nodes[i];
	return NULL;
}

/* cuGraphExecKernelNodeSetParams changes a node's function, grid and
 * value in the executable graph; its descriptor's mask stays. */
int cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node, const struct fake_kernel_params *p)
{
	struct fexec_node *n = exec_node(e, node);
	if (!n || !p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	n->fn = p->func, n->gx = p->gridDimX, n->value = value_of(p);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* cuGraphExecUpdate takes the values of g's kernel nodes, which must be
 * as many as e's, in order (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910,
 * else); the descriptors' masks stay. */
int cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err, int *result)
{
	if (!is_exec(e) || !is_graph(g))
		return CUDA_ERROR_INVALID_VALUE;
	struct fexec *x = e;
	struct fgraph *src = g;
	int k = 0;
	for (int i = 0; i < src->n; i++)
		k += src->nodes[i].type == CU_GRAPH_NODE_TYPE_KERNEL;
	if (k != x->n || src->n != k) {
		if (result)
			*result = 1;
		if (err)
			*err = NULL;
		return 910;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < k; i++) {
		x->nodes[i].alt = &src->nodes[i];
		x->nodes[i].fn = src->nodes[i].fn, x->nodes[i].gx = src->nodes[i].gx;
		x->nodes[i].value = src->nodes[i].value;
	}
	pthread_mutex_unlock(&mu);
	if (result)
		*result = 0;
	return 0;
}

/* The _v2 flavours of CUDA 12: their kernel node parameters begin as the
 * first's; cuGraphExecUpdate_v2 says its result in a CUgraphExecUpdateResultInfo. */
int cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
			    const struct fake_kernel_params *p)
{
	return cuGraphAddKernelNode(node, g, deps, n, p);
}

int cuGraphKernelNodeSetParams_v2(CUgraphNode node, const struct fake_kernel_params *p)
{
	return cuGraphKernelNodeSetParams(node, p);
}

int cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode node, const struct fake_kernel_params *p)
{
	return cuGraphExecKernelNodeSetParams(e, node, p);
}

int cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, void *info)
{
	struct {
		int result;
		CUgraphNode err, err_from;
	} *i = info;
	return cuGraphExecUpdate(e, g, i ? &i->err : NULL, i ? &i->result : NULL);
}

/* --- launches ------------------------------------------------------------------- */

static struct {
	uint64_t value;
	uint32_t mask[4];
} replayed[FAKE_NODES];
static int nreplayed;

/* cuGraphLaunch runs e's kernel nodes in order on the descriptors written
 * when it was instantiated. */
int cuGraphLaunch(CUgraphExec g, CUstream s)
{
	if (!is_exec(g))
		return error() ? error() : CUDA_ERROR_INVALID_VALUE;
	int r = graph_memory(g);
	if (r)
		return r;
	struct fexec *x = g;
	pthread_mutex_lock(&mu);
	nreplayed = x->n;
	for (int i = 0; i < x->n; i++) {
		replayed[i].value = x->nodes[i].value;
		memcpy(replayed[i].mask, x->nodes[i].tmd + CARVE_TMD_HOPPER_MASK_OFFSET, 16);
	}
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < x->n && !r; i++)
		r = fake_run(s, x->nodes[i].fn, x->nodes[i].gx, NULL, x->nodes[i].tmd, x->nodes[i].called);
	return r;
}

/* --- what tests read ---------------------------------------------------------- */

/* fakecuda_graphs: the graphs and executable graphs alive, and the
 * instantiations made, into out[0..2]. */
void fakecuda_graphs(int out[3])
{
	out[0] = __atomic_load_n(&graphs_alive, __ATOMIC_RELAXED);
	out[1] = __atomic_load_n(&execs_alive, __ATOMIC_RELAXED);
	out[2] = __atomic_load_n(&instantiations, __ATOMIC_RELAXED);
}

/* fakecuda_replay copies the values and masks of the last graph launch's
 * kernel nodes, at most max; returns how many it ran. */
int fakecuda_replay(uint64_t *values, uint32_t (*masks)[4], int max)
{
	pthread_mutex_lock(&mu);
	int n = nreplayed;
	for (int i = 0; i < n && i < max; i++) {
		values[i] = replayed[i].value;
		memcpy(masks[i], replayed[i].mask, sizeof masks[i]);
	}
	pthread_mutex_unlock(&mu);
	return n;
}
