/*
 * graph.c: executable graphs that follow the current mask. The driver
 * writes a kernel node's descriptor, and calls the launch callback
 * (hook.c) with it, when the graph is instantiated; a launch replays the
 * descriptors as they were (experiments/graphs/remask.cu: uploads, the
 * nodes' own parameters set again and cuGraphExecUpdate keep the mask too).
 * So at each instantiation this file keeps a clone of the graph, the
 * instantiation's flags, its context and the mask (and the block's
 * generation) of the GPU it was made on; at a launch or upload after the
 * block's generation moved, where that GPU's mask changed, it instantiates
 * the clone anew in that context, the callback writing the new mask (the
 * partition's, never a launch's narrowing: tide.c), and launches that
 * private copy in the graph's place from then on (until the next move). A
 * launch whose generation is unchanged costs a lookup of the graph and one
 * atomic load.
 *
 * What the graph computes stays the tenant's: its changes of the
 * executable graph's kernel nodes (cuGraphExecKernelNodeSetParams, and
 * cuGraphExecNodeSetParams) go into the clone and the private copy too,
 * and cuGraphExecUpdate clones the graph it updates from; a node the
 * tenant names after an update, of the graph it instantiated, is found by
 * its place among the nodes of the first clone (an update keeps the
 * graph's shape). A graph whose copy could not be made alike keeps the
 * mask it was instantiated under, as every graph did before, counted in
 * the block (graph_kept) at its first launch after each move: one with
 * memory nodes (their memory is the graph's own), conditional nodes,
 * instantiated for device launch, changed by any other
 * cuGraphExec*SetParams or cuGraphNodeSetEnabled, or whose clone, context
 * or new instantiation failed; it then launches itself, never failing for
 * this. A graph beyond the table's room is counted once, when it is
 * instantiated. Graphs instantiated anew are counted in graph_remade.
 *
 * The tenant makes its calls on one executable graph one at a time (CUDA
 * requires it): a graph's record changes only in those calls, unlocked;
 * the table of records is read without a lock and changed under one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

static struct {
	CUresult (*clone)(CUgraph *, CUgraph);
	CUresult (*find)(CUgraphNode *, CUgraphNode, CUgraph);
	CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
	CUresult (*exec_destroy)(CUgraphExec);
	CUresult (*destroy)(CUgraph);
	CUresult (*nodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*type)(CUgraphNode, int *);
	CUresult (*child)(CUgraphNode, CUgraph *);
	CUresult (*kernel_set[2])(CUgraphNode, const void *); /* cuGraphKernelNodeSetParams, _v2 */
	CUresult (*node_set)(CUgraphNode, void *);             /* cuGraphNodeSetParams */
	CUresult (*push)(CUcontext);
	CUresult (*pop)(CUcontext *);
} drv;
static int on; /* partitioned, and the driver has what a copy takes */

/* An executable graph's record. clone NULL: it keeps its mask. */
struct rec {
	CUgraph clone;
	CUgraph first;      /* the clone made at instantiation, once an update replaced it; NULL: clone is it */
	CUgraphExec copy;   /* the private copy, NULL: none */
	CUgraphExec target; /* what its launches launch: copy, or the graph itself */
	unsigned long long flags;
	CUcontext ctx;      /* the context it was instantiated in */
	int gpu;
	int known;          /* mask is what target's descriptors hold */
	uint64_t gen;       /* the block's generation target was checked at */
	uint32_t mask[CARVE_MASK_WORDS];
	int counted;        /* counted in graph_kept on mask at, since target last changed */
	uint32_t at[CARVE_MASK_WORDS];
	uint32_t own[CARVE_MASK_WORDS]; /* the graph's own, from its instantiation */
	int own_known;
	const char *why;    /* why it keeps its mask */
};

/* The records, by executable graph: open addressing, read unlocked. A
 * slot's key is 0 (never used), TOMB (its record gone) or the graph. */
#define SLOTS 8192
#define PROBES 64
#define TOMB ((CUgraphExec)(uintptr_t)-1)
static struct {
	CUgraphExec key;
	struct rec *rec;
} slots[SLOTS];
static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned home(CUgraphExec e)
{
	uint64_t k = (uint64_t)(uintptr_t)e;
	k ^= k >> 29, k *= 0xbf58476d1ce4e5b9ull, k ^= k >> 32;
	return (unsigned)k & (SLOTS - 1);
}

static struct rec *find(CUgraphExec e)
{
	for (unsigned i = 0, h = home(e); i < PROBES; i++, h = (h + 1) & (SLOTS - 1)) {
		CUgraphExec k = __atomic_load_n(&slots[h].key, __ATOMIC_ACQUIRE);
		if (k == e)
			return __atomic_load_n(&slots[h].rec, __ATOMIC_RELAXED);
		if (!k)
			return NULL;
	}
	return NULL;
}

static int put(CUgraphExec e, struct rec *r)
{
	int done = 0;
	pthread_mutex_lock(&slots_mu);
	for (unsigned i = 0, h = home(e); i < PROBES && !done; i++, h = (h + 1) & (SLOTS - 1)) {
		CUgraphExec k = slots[h].key;
		if (!k || k == TOMB) {
			__atomic_store_n(&slots[h].rec, r, __ATOMIC_RELAXED);
			__atomic_store_n(&slots[h].key, e, __ATOMIC_RELEASE);
			done = 1;
		}
	}
	pthread_mutex_unlock(&slots_mu);
	return done;
}

static struct rec *take(CUgraphExec e)
{
	struct rec *r = NULL;
	pthread_mutex_lock(&slots_mu);
	for (unsigned i = 0, h = home(e); i < PROBES; i++, h = (h + 1) & (SLOTS - 1)) {
		if (slots[h].key == e) {
			r = slots[h].rec;
			__atomic_store_n(&slots[h].key, TOMB, __ATOMIC_RELEASE);
			break;
		}
		if (!slots[h].key)
			break;
	}
	pthread_mutex_unlock(&slots_mu);
	return r;
}

#define LOOKUP(field, name) (*(void **)&drv.field = carve_real_dlsym(cuda, name))
void carve_graph_init(void *cuda)
{
	LOOKUP(clone, "cuGraphClone");
	LOOKUP(find, "cuGraphNodeFindInClone");
	LOOKUP(instantiate, "cuGraphInstantiateWithFlags");
	LOOKUP(exec_destroy, "cuGraphExecDestroy");
	LOOKUP(destroy, "cuGraphDestroy");
	LOOKUP(nodes, "cuGraphGetNodes");
	LOOKUP(type, "cuGraphNodeGetType");
	LOOKUP(child, "cuGraphChildGraphNodeGetGraph");
	LOOKUP(kernel_set[0], "cuGraphKernelNodeSetParams");
	LOOKUP(kernel_set[1], "cuGraphKernelNodeSetParams_v2");
	LOOKUP(node_set, "cuGraphNodeSetParams");
	LOOKUP(push, "cuCtxPushCurrent_v2");
	LOOKUP(pop, "cuCtxPopCurrent_v2");
	int all = drv.clone && drv.find && drv.instantiate && drv.exec_destroy && drv.destroy && drv.nodes && drv.type &&
		  drv.push && drv.pop;
	__atomic_store_n(&on, carve_block && all, __ATOMIC_RELEASE);
	if (carve_block && !all)
		CARVE_DEBUG("the driver lacks what instantiating a graph anew takes: graphs keep the mask they were instantiated under");
}

/* unlike: why graph g (depth: a child graph's) cannot be instantiated
 * anew alike, NULL if it can. */
static const char *unlike(CUgraph g, int depth)
{
	size_t n = 0;
	if (depth > 8 || drv.nodes(g, NULL, &n) != CUDA_SUCCESS)
		return "its nodes could not be read";
	if (!n)
		return NULL;
	CUgraphNode *nodes = calloc(n, sizeof *nodes);
	if (!nodes)
		return "no memory";
	const char *why = drv.nodes(g, nodes, &n) == CUDA_SUCCESS ? NULL : "its nodes could not be read";
	for (size_t i = 0; i < n && !why; i++) {
		int type = -1;
		CUgraph child = NULL;
		if (drv.type(nodes[i], &type) != CUDA_SUCCESS)
			why = "a node's type could not be read";
		else if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || type == CU_GRAPH_NODE_TYPE_MEM_FREE)
			why = "it holds memory nodes";
		else if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
			why = "it holds conditional nodes";
		else if (type == CU_GRAPH_NODE_TYPE_GRAPH &&
			 (!drv.child || drv.child(nodes[i], &child) != CUDA_SUCCESS || !child))
			why = "a child graph could not be read";
		else if (type == CU_GRAPH_NODE_TYPE_GRAPH)
			why = unlike(child, depth + 1);
	}
	free(nodes);
	return why;
}

/* keep makes r keep the graph's own mask from now on: its copy and clone go. */
static void keep(CUgraphExec e, struct rec *r, const char *why)
{
	if (r->copy) { /* it ran on a later mask than its own: counted at its next launch */
		drv.exec_destroy(r->copy); /* freed once its launches in flight end */
		__atomic_store_n(&r->gen, UINT64_MAX, __ATOMIC_RELEASE);
	}
	if (r->clone)
		drv.destroy(r->clone);
	if (r->first)
		drv.destroy(r->first);
	r->copy = NULL, r->clone = NULL, r->first = NULL, r->why = why;
	memcpy(r->mask, r->own, sizeof r->mask);
	r->known = r->own_known;
	r->counted = 0;
	__atomic_store_n(&r->target, e, __ATOMIC_RELEASE);
	CARVE_DEBUG("graph %p keeps the mask it was instantiated under: %s", e, why);
}

/* forget drops r, its copy and its clone. */
static void forget(struct rec *r)
{
	if (r->copy)
		drv.exec_destroy(r->copy);
	if (r->clone)
		drv.destroy(r->clone);
	if (r->first)
		drv.destroy(r->first);
	free(r);
}

/* kept counts a launch of e on the mask it was instantiated under after a
 * move (or e, found no room in the table, at its instantiation), and
 * says so once. */
static void kept(CUgraphExec e, const char *why)
{
	static int said;
	__atomic_add_fetch(&carve_block->graph_kept, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		carve_say("a CUDA graph keeps the partition it was instantiated under after a move (%s); "
			  "graphs_kept in carve ls -o json counts such graphs", why);
	else
		CARVE_DEBUG("graph %p keeps the partition it was instantiated under: %s", e, why);
}

/* Every flavour of cuGraphInstantiate; its flags are the flavour's. */
CUresult carve_graph_instantiate(void *real, int flavour, CUgraphExec *e, CUgraph g, void *a, void *b, size_t c)
{
	int follow = __atomic_load_n(&on, __ATOMIC_ACQUIRE);
	uint64_t before = follow ? __atomic_load_n(&carve_block->gen, __ATOMIC_ACQUIRE) : 0;
	CUcontext ctx = NULL;
	int gpu = follow ? carve_launch_gpu(NULL, &ctx) : CARVE_GPU_NONE;
	CUresult res = carve_mem_instantiate(real, e, g, a, b, c);
	if (res != CUDA_SUCCESS || !follow || !e || !*e || gpu == CARVE_GPU_NONE)
		return res;
	struct rec *r = take(*e); /* a handle the driver gave before, destroyed unseen */
	if (r)
		forget(r);
	if (!(r = calloc(1, sizeof *r)))
		return res;
	unsigned long long flags = flavour == CARVE_INSTANTIATE_FLAGS ? (unsigned long long)(uintptr_t)a
				   : flavour == CARVE_INSTANTIATE_PARAMS && a ? *(const unsigned long long *)a
									     : 0;
	r->flags = flags & ~CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD; /* a copy is made at a launch or upload */
	r->ctx = ctx;
	r->gpu = gpu;
	r->target = *e;
	uint64_t gen = 0;
	/* the mask its nodes got, unless the block moved meanwhile */
	r->own_known = carve_current_mask(gpu, r->own, &gen) && gen == before;
	memcpy(r->mask, r->own, sizeof r->mask);
	r->known = r->own_known;
	r->gen = before;
	const char *why = flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH ? "it was instantiated for device launch"
									      : unlike(g, 0);
	if (!why && drv.clone(&r->clone, g) != CUDA_SUCCESS) {
		r->clone = NULL;
		why = "cloning it failed";
	}
	if (why)
		keep(*e, r, why);
	if (!put(*e, r)) {
		kept(*e, "too many executable graphs");
		forget(r);
	}
	return res;
}

CUresult carve_graph_exec_destroy(void *real, CUgraphExec e)
{
	struct rec *r = __atomic_load_n(&on, __ATOMIC_ACQUIRE) ? take(e) : NULL;
	if (r)
		forget(r);
	return carve_mem_exec_destroy(real, e);
}

/* remake instantiates r's clone anew in r's context: the copy into *x,
 * the block's generation after into *after; why not, if it could not. */
static const char *remake(struct rec *r, CUgraphExec *x, uint64_t *after)
{
	*x = NULL;
	if (drv.push(r->ctx) != CUDA_SUCCESS)
		return "its context could not be made current";
	CUresult res = drv.instantiate(x, r->clone, r->flags);
	*after = __atomic_load_n(&carve_block->gen, __ATOMIC_ACQUIRE);
	CUcontext popped;
	drv.pop(&popped);
	if (res == CUDA_SUCCESS && *x)
		return NULL;
	*x = NULL;
	return "instantiating it anew failed";
}

/* moved: e's launch after the block's generation moved (from r->gen). */
static CUgraphExec moved(CUgraphExec e, struct rec *r)
{
	uint32_t m[CARVE_MASK_WORDS];
	uint64_t gen = 0;
	if (!carve_current_mask(r->gpu, m, &gen) ||                /* no mask to write: the hook writes none either */
	    (r->known && memcmp(m, r->mask, sizeof m) == 0) ||     /* another GPU's mask moved, or none */
	    (r->counted && memcmp(m, r->at, sizeof m) == 0)) {     /* counted on this mask already */
		__atomic_store_n(&r->gen, gen, __ATOMIC_RELEASE);
		return r->target;
	}
	CUgraphExec x = NULL;
	uint64_t after = 0;
	const char *why = r->clone ? remake(r, &x, &after) : r->why;
	if (!x) { /* target's descriptors hold what they held: counted once a move */
		kept(e, why);
		memcpy(r->at, m, sizeof m);
		r->counted = 1;
		__atomic_store_n(&r->gen, gen, __ATOMIC_RELEASE);
		return r->target;
	}
	CUgraphExec old = r->copy;
	r->copy = x;
	memcpy(r->mask, m, sizeof m);
	r->known = after == gen; /* else its nodes may hold a later mask: checked again */
	r->counted = 0;
	__atomic_store_n(&r->target, x, __ATOMIC_RELEASE);
	__atomic_store_n(&r->gen, gen, __ATOMIC_RELEASE);
	if (old)
		drv.exec_destroy(old); /* freed once its launches in flight end */
	__atomic_add_fetch(&carve_block->graph_remade, 1, __ATOMIC_RELAXED);
	CARVE_DEBUG("graph %p instantiated anew on the mask of generation %llu", e, (unsigned long long)gen);
	return x;
}

CUgraphExec carve_graph_target(CUgraphExec e)
{
	if (!__atomic_load_n(&on, __ATOMIC_ACQUIRE))
		return e;
	struct rec *r = find(e);
	if (!r)
		return e;
	if (__atomic_load_n(&carve_block->gen, __ATOMIC_ACQUIRE) == __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&r->target, __ATOMIC_ACQUIRE);
	return moved(e, r);
}

/* nodes_of: g's nodes in cuGraphGetNodes' order, as many into *k (to
 * free); NULL if none or unread. */
static CUgraphNode *nodes_of(CUgraph g, size_t *k)
{
	*k = 0;
	if (drv.nodes(g, NULL, k) != CUDA_SUCCESS || !*k)
		return NULL;
	CUgraphNode *all = calloc(*k, sizeof *all);
	if (all && drv.nodes(g, all, k) != CUDA_SUCCESS) {
		free(all);
		all = NULL;
	}
	return all;
}

/* in_clone finds the tenant's node n of e in r's clone: n's copy there;
 * else, after an update, a node of the graph e was instantiated from, by
 * its place among the first clone's nodes. */
static int in_clone(struct rec *r, CUgraphNode n, CUgraphNode *cn)
{
	CUgraphNode fn = NULL;
	if (drv.find(cn, n, r->clone) == CUDA_SUCCESS && *cn)
		return 1;
	if (!r->first || drv.find(&fn, n, r->first) != CUDA_SUCCESS || !fn)
		return 0;
	size_t k1, k2;
	CUgraphNode *a = nodes_of(r->first, &k1), *b = nodes_of(r->clone, &k2);
	int found = 0;
	for (size_t i = 0; a && b && i < k1 && i < k2 && !found; i++)
		if (a[i] == fn)
			*cn = b[i], found = 1;
	free(a);
	free(b);
	return found;
}

/* The tenant's change of node n of e, which the driver took (real): into
 * the clone, where the next copy is made from, and into the copy. */
CUresult carve_graph_edit(void *real, int how, CUgraphExec e, CUgraphNode n, void *p, void *q)
{
	typedef CUresult (*edit_fn)(CUgraphExec, CUgraphNode, void *, void *);
	CUresult res = ((edit_fn)real)(e, n, p, q);
	struct rec *r;
	if (res != CUDA_SUCCESS || !__atomic_load_n(&on, __ATOMIC_ACQUIRE) || !(r = find(e)) || !r->clone)
		return res;
	CUgraphNode cn = NULL;
	int fine = how != CARVE_EDIT_OTHER && in_clone(r, n, &cn);
	if (fine && how == CARVE_EDIT_NODE)
		fine = drv.node_set && drv.node_set(cn, p) == CUDA_SUCCESS;
	else if (fine) {
		CUresult (*set)(CUgraphNode, const void *) = drv.kernel_set[how == CARVE_EDIT_KERNEL_V2];
		fine = set && set(cn, p) == CUDA_SUCCESS;
	}
	if (fine && r->copy)
		fine = ((edit_fn)real)(r->copy, cn, p, q) == CUDA_SUCCESS;
	if (!fine)
		keep(e, r, how == CARVE_EDIT_OTHER ? "a node of it was changed in a way not followed" : "a change of a node could not be followed");
	return res;
}

/* cuGraphExecUpdate (both flavours): e now computes what g does; the
 * clone becomes g's (the first kept, to find the tenant's nodes in), and
 * the copy, if any, is made anew from it at the next launch. */
CUresult carve_graph_update(void *real, CUgraphExec e, CUgraph g, void *a, void *b)
{
	typedef CUresult (*update_fn)(CUgraphExec, CUgraph, void *, void *);
	CUresult res = ((update_fn)real)(e, g, a, b);
	struct rec *r;
	if (res != CUDA_SUCCESS || !__atomic_load_n(&on, __ATOMIC_ACQUIRE) || !(r = find(e)) || !r->clone)
		return res;
	CUgraph c = NULL;
	const char *why = unlike(g, 0);
	if (!why && drv.clone(&c, g) != CUDA_SUCCESS)
		why = "cloning the graph it was updated from failed";
	if (why) {
		keep(e, r, why);
		return res;
	}
	if (r->first)
		drv.destroy(r->clone);
	else
		r->first = r->clone;
	r->clone = c;
	if (r->copy) { /* the copy computes what e did: e itself until the next copy */
		drv.exec_destroy(r->copy);
		r->copy = NULL;
		memcpy(r->mask, r->own, sizeof r->mask);
		r->known = r->own_known;
		r->counted = 0;
		__atomic_store_n(&r->target, e, __ATOMIC_RELEASE);
		__atomic_store_n(&r->gen, UINT64_MAX, __ATOMIC_RELEASE);
	}
	return res;
}
