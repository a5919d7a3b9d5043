/*
 * mem.c: the tenant's device memory account, and what it holds. Every
 * driver call that takes device memory is charged to the tenant's account
 * before the driver is called, and refused with CUDA_ERROR_OUT_OF_MEMORY
 * where it would pass the limit; every call that gives memory back is
 * credited once the driver has freed it. interpose.c's wrappers call in
 * with the driver's function, each path in its file, which says what it
 * counts and how: mem_alloc.c (plain and pitched allocations, arrays, what
 * the program is told of free and total memory), mem_pool.c
 * (stream-ordered allocation), mem_graph.c (graphs), mem_vmm.c (the
 * virtual memory API), mem_ctx.c (the device malloc heap, primary
 * contexts).
 *
 * This file holds what they share: the account (charges, credits,
 * refusals), the table of what each allocation holds, what each pool and
 * each device's graph memory reserve as the account follows them, the
 * reclaiming before a refusal, the memory of contexts that go, and the
 * account's start and end.
 *
 * The account (carve_ctl.h, mem_*) is the block carve made for the tenant,
 * shared by all its processes (ctl.c's carve_account): mem_total there,
 * against mem_limit there, and each process's own bytes in its own
 * block's mem_used. Bytes go to mem_total before mem_used and leave
 * mem_used before mem_total, so a process killed between the two leaves
 * the account too high, never too low.
 *
 * Imports (cuIpcOpenMemHandle, cuMemImportFromShareableHandle,
 * cuMemPoolImportPointer) pass uncounted: memory is charged to the process
 * that allocated it. Memory of a context that is destroyed (cuCtxDestroy,
 * a primary context reset or released for good) is credited with it. The
 * context's own memory (code, stacks, the default heap) is not counted:
 * under MPS, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT bounds it all.
 *
 * Before refusing, the shim trims what pools and graph memory hold unused
 * (cuMemPoolTrimTo, cuDeviceGraphMemTrim) and credits what ended processes
 * of the tenant held (ctl.c), then tries again.
 *
 * A process forked without exec does not count (its block is its
 * parent's); one that execs gets a block of its own.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* --- the account's state ---------------------------------------------------- */

struct carve_mem_drv carve_mem_drv; /* the driver's functions the memory files call themselves */
struct carve_ctl *carve_mem_acct;   /* the tenant's account */
static char *dir;                   /* the runtime directory, for ended processes */
int carve_mem_on;                   /* counting: a block, the driver, not a forked child */

CUcontext carve_mem_ctx(void)
{
	CUcontext c = NULL;
	if (carve_mem_drv.ctx_current)
		carve_mem_drv.ctx_current(&c);
	return c;
}

CUdevice carve_mem_device(void)
{
	CUdevice d = 0;
	if (!carve_mem_drv.ctx_device || carve_mem_drv.ctx_device(&d) != CUDA_SUCCESS)
		return 0;
	return d;
}

/* --- the account ------------------------------------------------------------- */

static void sub_sat(uint64_t *v, uint64_t n)
{
	uint64_t old = __atomic_load_n(v, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(v, &old, old - (n < old ? n : old), 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static void raise_peak(uint64_t t)
{
	uint64_t p = __atomic_load_n(&carve_mem_acct->mem_peak, __ATOMIC_RELAXED);
	while (t > p && !__atomic_compare_exchange_n(&carve_mem_acct->mem_peak, &p, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* carve_mem_charge adds n bytes to the account unless that passes the limit;
 * 0 if it would. */
int carve_mem_charge(uint64_t n)
{
	if (!n)
		return 1;
	uint64_t lim = carve_mem_limit(), t;
	if (!lim) {
		t = __atomic_add_fetch(&carve_mem_acct->mem_total, n, __ATOMIC_RELAXED);
	} else {
		t = __atomic_load_n(&carve_mem_acct->mem_total, __ATOMIC_RELAXED);
		do {
			if (t + n > lim || t + n < t)
				return 0;
		} while (!__atomic_compare_exchange_n(&carve_mem_acct->mem_total, &t, t + n, 0, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED));
		t += n;
	}
	raise_peak(t);
	__atomic_add_fetch(&carve_block->mem_used, n, __ATOMIC_RELAXED);
	return 1;
}

/* charge_anyway adds n bytes the driver has already taken. */
static void charge_anyway(uint64_t n)
{
	if (!n)
		return;
	raise_peak(__atomic_add_fetch(&carve_mem_acct->mem_total, n, __ATOMIC_RELAXED));
	__atomic_add_fetch(&carve_block->mem_used, n, __ATOMIC_RELAXED);
}

void carve_mem_credit(uint64_t n)
{
	if (!n)
		return;
	sub_sat(&carve_block->mem_used, n);
	sub_sat(&carve_mem_acct->mem_total, n);
}


/* carve_mem_refused counts a refusal of n bytes, the tenant's in its account and
 * the process's in its block, and says so (the first time, or all under
 * CARVE_DEBUG). */
void carve_mem_refused(uint64_t n)
{
	static int said;
	uint64_t now = carve_now_ns();
	uint64_t refused = __atomic_add_fetch(&carve_mem_acct->mem_refused, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&carve_mem_acct->mem_refused_ns, now, __ATOMIC_RELAXED);
	if (carve_mem_acct != carve_block) {
		__atomic_add_fetch(&carve_block->mem_refused, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&carve_block->mem_refused_ns, now, __ATOMIC_RELAXED);
	}
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) || carve_debug)
		carve_say("refused an allocation of %llu bytes (the tenant's refusal %llu): the tenant holds %llu of its "
			  "%llu-byte memory limit (carve ls shows its processes)",
			  (unsigned long long)n, (unsigned long long)refused,
			  (unsigned long long)__atomic_load_n(&carve_mem_acct->mem_total, __ATOMIC_RELAXED),
			  (unsigned long long)carve_mem_limit());
}

/* carve_mem_charge_or_refuse charges n, trimming pools and crediting the tenant's
 * ended processes first where the limit would be passed; 0: refused,
 * counted and said. */
int carve_mem_charge_or_refuse(uint64_t n)
{
	if (carve_mem_charge(n))
		return 1;
	carve_mem_reclaim();
	if (carve_mem_charge(n))
		return 1;
	carve_mem_refused(n);
	return 0;
}

/* settle replaces what was charged beforehand (pre) by what the driver
 * took, in one step: the account never counts both. */
static void settle(uint64_t pre, uint64_t took)
{
	if (took > pre)
		charge_anyway(took - pre);
	else
		carve_mem_credit(pre - took);
}
/* --- what each allocation holds: a striped hash table ------------------------- */


#define STRIPES 64
static struct stripe {
	pthread_mutex_t mu;
	struct carve_mem_entry *e;
	uint32_t cap, n; /* cap a power of two, or 0 */
} __attribute__((aligned(64))) stripes[STRIPES];

static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static void stripes_init(void)
{
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&stripes[i].mu, NULL);
}

static uint64_t hash(uint32_t kind, uint64_t key)
{
	uint64_t z = key + 0x9e3779b97f4a7c15ull * kind;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct stripe *stripe_of(uint64_t h)
{
	return &stripes[h >> 58];
}

/* slot finds kind/key in s (locked): its index, or where it would go. */
static uint32_t slot(const struct stripe *s, uint64_t h, uint32_t kind, uint64_t key, int *found)
{
	uint32_t m = s->cap - 1, i = (uint32_t)h & m;
	while (s->e[i].kind && !(s->e[i].kind == kind && s->e[i].key == key))
		i = (i + 1) & m;
	*found = s->e[i].kind != 0;
	return i;
}

static int grow(struct stripe *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : 16;
	struct carve_mem_entry *e = calloc(cap, sizeof *e), *old = s->e;
	if (!e)
		return 0;
	uint32_t oldcap = s->cap;
	s->e = e, s->cap = cap;
	for (uint32_t i = 0; i < oldcap; i++) {
		if (!old[i].kind)
			continue;
		int found;
		uint32_t j = slot(s, hash(old[i].kind, old[i].key), old[i].kind, old[i].key, &found);
		s->e[j] = old[i];
	}
	free(old);
	return 1;
}

/* remove_at empties slot i of s (locked), moving back the entries after it
 * that probed past it. */
static void remove_at(struct stripe *s, uint32_t i)
{
	uint32_t m = s->cap - 1, j = i;
	s->e[i].kind = 0;
	s->n--;
	for (;;) {
		j = (j + 1) & m;
		if (!s->e[j].kind)
			return;
		uint32_t home = (uint32_t)hash(s->e[j].kind, s->e[j].key) & m;
		/* move e[j] to the hole at i if its home is not in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			s->e[i] = s->e[j];
			s->e[j].kind = 0;
			i = j;
		}
	}
}

/* carve_mem_put keeps e (replacing what was kept under its kind and key). */
void carve_mem_put(const struct carve_mem_entry *e)
{
	uint64_t h = hash(e->kind, e->key);
	struct stripe *s = stripe_of(h);
	pthread_mutex_lock(&s->mu);
	if ((s->n + 1) * 2 > s->cap && !grow(s)) {
		pthread_mutex_unlock(&s->mu);
		carve_say("out of host memory for the memory account: an allocation goes uncounted");
		return;
	}
	int found;
	uint32_t i = slot(s, h, e->kind, e->key, &found);
	if (!found)
		s->n++;
	s->e[i] = *e;
	pthread_mutex_unlock(&s->mu);
}

/* carve_mem_take removes what was kept under kind and key into *out; 0 if nothing. */
int carve_mem_take(uint32_t kind, uint64_t key, struct carve_mem_entry *out)
{
	uint64_t h = hash(kind, key);
	struct stripe *s = stripe_of(h);
	pthread_mutex_lock(&s->mu);
	int found = 0;
	if (s->cap) {
		uint32_t i = slot(s, h, kind, key, &found);
		if (found) {
			*out = s->e[i];
			remove_at(s, i);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* carve_mem_get copies what is kept under kind and key; 0 if nothing. */
int carve_mem_get(uint32_t kind, uint64_t key, struct carve_mem_entry *out)
{
	uint64_t h = hash(kind, key);
	struct stripe *s = stripe_of(h);
	pthread_mutex_lock(&s->mu);
	int found = 0;
	if (s->cap) {
		uint32_t i = slot(s, h, kind, key, &found);
		if (found)
			*out = s->e[i];
	}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* carve_mem_vmm_count moves a handle's references and mappings; when both are gone
 * the driver has freed it: its bytes are returned, to be credited. */
uint64_t carve_mem_vmm_count(CUmemGenericAllocationHandle handle, int refs, int maps)
{
	uint64_t h = hash(MEM_VMM, handle), freed = 0;
	struct stripe *s = stripe_of(h);
	pthread_mutex_lock(&s->mu);
	int found = 0;
	if (s->cap) {
		uint32_t i = slot(s, h, MEM_VMM, handle, &found);
		if (found) {
			s->e[i].refs += refs;
			s->e[i].maps += maps;
			if (s->e[i].refs <= 0 && s->e[i].maps <= 0) {
				freed = s->e[i].size;
				remove_at(s, i);
			}
		}
	}
	pthread_mutex_unlock(&s->mu);
	return freed;
}

/* drop_context removes what was kept for memory of context c, and returns
 * its bytes. */
static uint64_t drop_context(CUcontext c)
{
	uint64_t bytes = 0;
	for (int k = 0; k < STRIPES; k++) {
		struct stripe *s = &stripes[k];
		pthread_mutex_lock(&s->mu);
		for (uint32_t i = 0; i < s->cap;) {
			struct carve_mem_entry *e = &s->e[i];
			if (e->kind && e->ctx == c &&
			    (e->kind == MEM_PTR || e->kind == MEM_ARRAY || e->kind == MEM_MIPMAP || e->kind == MEM_HEAP)) {
				bytes += e->size;
				remove_at(s, i); /* an entry may have moved into i */
				continue;
			}
			i++;
		}
		pthread_mutex_unlock(&s->mu);
	}
	return bytes;
}
/* carve_mem_keep puts an allocation of size bytes in the current context into the
 * table. */
void carve_mem_keep(uint32_t kind, uint64_t key, uint64_t size)
{
	struct carve_mem_entry e = {.key = key, .size = size, .ctx = carve_mem_ctx(), .kind = kind};
	carve_mem_put(&e);
}


/* carve_mem_freed settles a free the driver answered with r, of the entry taken
 * from the table (if kept) before the call: credited, or put back. */
CUresult carve_mem_freed(CUresult r, int kept, const struct carve_mem_entry *e)
{
	if (kept) {
		if (r == CUDA_SUCCESS)
			carve_mem_credit(e->size);
		else
			carve_mem_put(e);
	}
	return r;
}
/* carve_mem_on_device: do the properties props (a pool's, cuMemCreate's) place
 * memory on a device? */
int carve_mem_on_device(const void *props)
{
	int type;
	memcpy(&type, (const char *)props + CU_MEM_PROPS_LOCATION_TYPE_OFFSET, sizeof type);
	return type == CU_MEM_LOCATION_TYPE_DEVICE;
}

/* --- what pools and graph memory reserve ------------------------------------ */

struct carve_mem_pool carve_mem_pools[CARVE_MEM_POOLS];
int carve_mem_npools; /* slots in use or used */
pthread_mutex_t carve_mem_pools_mu = PTHREAD_MUTEX_INITIALIZER;
uint64_t carve_mem_pool_gen = 1; /* moves when a device's current pool may have */

uint64_t carve_mem_pool_attr(CUmemoryPool h, int attr)
{
	uint64_t v = 0;
	if (carve_mem_drv.pool_get)
		carve_mem_drv.pool_get(h, attr, &v);
	return v;
}

/* carve_mem_find_pool returns the record of pool h, made if make (counted as asked). */
struct carve_mem_pool *carve_mem_find_pool(CUmemoryPool h, int make, int counted)
{
	if (!h)
		return NULL;
	int n = __atomic_load_n(&carve_mem_npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&carve_mem_pools[i].h, __ATOMIC_ACQUIRE) == h)
			return &carve_mem_pools[i];
	if (!make)
		return NULL;
	pthread_mutex_lock(&carve_mem_pools_mu);
	struct carve_mem_pool *p = NULL, *free_slot = NULL;
	for (int i = 0; i < carve_mem_npools && !p; i++) {
		if (carve_mem_pools[i].h == h)
			p = &carve_mem_pools[i];
		else if (!carve_mem_pools[i].h && !free_slot)
			free_slot = &carve_mem_pools[i];
	}
	if (!p && !free_slot && carve_mem_npools < CARVE_MEM_POOLS) {
		free_slot = &carve_mem_pools[carve_mem_npools];
		pthread_mutex_init(&free_slot->mu, NULL);
		__atomic_store_n(&carve_mem_npools, carve_mem_npools + 1, __ATOMIC_RELEASE);
	}
	if (!p && free_slot) {
		p = free_slot;
		pthread_mutex_lock(&p->mu);
		p->charged = 0;
		p->counted = counted;
		p->threshold = counted ? carve_mem_pool_attr(h, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) : 0;
		__atomic_store_n(&p->h, h, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_unlock(&carve_mem_pools_mu);
	if (!p)
		carve_say("more than %d memory pools: pool %p goes uncounted", CARVE_MEM_POOLS, h);
	return p;
}

/* carve_mem_pool_commit makes the account hold what pool p reserves now, less pre
 * charged for it beforehand (p locked). */
void carve_mem_pool_commit(struct carve_mem_pool *p, uint64_t pre)
{
	if (!p->h || !p->counted) {
		carve_mem_credit(pre);
		return;
	}
	uint64_t r = carve_mem_pool_attr(p->h, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
	settle(pre + p->charged, r);
	__atomic_store_n(&p->charged, r, __ATOMIC_RELAXED);
}

#define DEVICES 32
static struct carve_mem_gdev gdevs[DEVICES];
static pthread_once_t gdevs_once = PTHREAD_ONCE_INIT;
int carve_mem_graphs_seen; /* a graph allocated memory: graph memory is read after launches */

static void gdevs_init(void)
{
	for (int i = 0; i < DEVICES; i++)
		pthread_mutex_init(&gdevs[i].mu, NULL);
}

struct carve_mem_gdev *carve_mem_gdev_of(CUdevice d)
{
	return d >= 0 && d < DEVICES ? &gdevs[d] : NULL;
}

uint64_t carve_mem_graph_attr(CUdevice d, int attr)
{
	uint64_t v = 0;
	if (carve_mem_drv.graph_attr)
		carve_mem_drv.graph_attr(d, attr, &v);
	return v;
}

void carve_mem_graph_commit(CUdevice d, struct carve_mem_gdev *g, uint64_t pre) /* g locked */
{
	uint64_t r = carve_mem_graph_attr(d, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
	settle(pre + g->charged, r);
	__atomic_store_n(&g->charged, r, __ATOMIC_RELAXED);
}

/* --- reclaiming before a refusal ------------------------------------------------- */

/* carve_mem_reclaim gives back what pools and graph memory hold unused, reads them
 * again, and credits what the tenant's ended processes held. It is called
 * with no pool's lock held. */
void carve_mem_reclaim(void)
{
	int n = __atomic_load_n(&carve_mem_npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct carve_mem_pool *p = &carve_mem_pools[i];
		if (!__atomic_load_n(&p->h, __ATOMIC_ACQUIRE) || !p->counted)
			continue;
		pthread_mutex_lock(&p->mu);
		if (p->h && carve_mem_drv.pool_trim) {
			carve_mem_drv.pool_trim(p->h, 0);
			carve_mem_pool_commit(p, 0);
		}
		pthread_mutex_unlock(&p->mu);
	}
	if (__atomic_load_n(&carve_mem_graphs_seen, __ATOMIC_ACQUIRE)) {
		CUdevice d = carve_mem_device();
		struct carve_mem_gdev *g = carve_mem_gdev_of(d);
		if (g) {
			pthread_mutex_lock(&g->mu);
			if (carve_mem_drv.graph_trim)
				carve_mem_drv.graph_trim(d);
			carve_mem_graph_commit(d, g, 0);
			pthread_mutex_unlock(&g->mu);
		}
	}
	carve_credit_ended(carve_mem_acct, dir);
}

/* --- contexts that go --------------------------------------------------------------- */

/* carve_mem_context_gone credits the memory of context c, which the driver
 * freed with it, and reads pools and graph memory again. */
void carve_mem_context_gone(CUcontext c)
{
	if (!carve_mem_counting() || !c)
		return;
	carve_mem_credit(drop_context(c));
	__atomic_add_fetch(&carve_mem_pool_gen, 1, __ATOMIC_RELEASE);
	int n = __atomic_load_n(&carve_mem_npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&carve_mem_pools[i].mu);
		carve_mem_pool_commit(&carve_mem_pools[i], 0);
		pthread_mutex_unlock(&carve_mem_pools[i].mu);
	}
	if (__atomic_load_n(&carve_mem_graphs_seen, __ATOMIC_ACQUIRE)) {
		for (int d = 0; d < DEVICES; d++) {
			if (!__atomic_load_n(&gdevs[d].charged, __ATOMIC_RELAXED))
				continue;
			pthread_mutex_lock(&gdevs[d].mu);
			carve_mem_graph_commit(d, &gdevs[d], 0);
			pthread_mutex_unlock(&gdevs[d].mu);
		}
	}
}

/* --- start and end --------------------------------------------------------------------- */

static void forked(void)
{
	__atomic_store_n(&carve_mem_on, 0, __ATOMIC_RELAXED); /* the parent's block is not ours */
}

#define RESOLVE(field, name) carve_mem_drv.field = (__typeof__(carve_mem_drv.field))carve_real_dlsym(cuda, name)

void carve_mem_init(void *cuda, const char *ctl_dir)
{
	if (!carve_block)
		return;
	pthread_once(&stripes_once, stripes_init);
	pthread_once(&gdevs_once, gdevs_init);
	RESOLVE(ctx_current, "cuCtxGetCurrent");
	RESOLVE(ctx_device, "cuCtxGetDevice");
	RESOLVE(ctx_limit, "cuCtxGetLimit");
	RESOLVE(device_pool, "cuDeviceGetMemPool");
	RESOLVE(pool_get, "cuMemPoolGetAttribute");
	RESOLVE(pool_trim, "cuMemPoolTrimTo");
	RESOLVE(graph_attr, "cuDeviceGetGraphMemAttribute");
	RESOLVE(graph_trim, "cuDeviceGraphMemTrim");
	RESOLVE(graph_nodes, "cuGraphGetNodes");
	RESOLVE(node_type, "cuGraphNodeGetType");
	RESOLVE(alloc_params, "cuGraphMemAllocNodeGetParams");
	RESOLVE(child_graph, "cuGraphChildGraphNodeGetGraph");
	RESOLVE(mem_free, "cuMemFree_v2");
	RESOLVE(primary_state, "cuDevicePrimaryCtxGetState");
	RESOLVE(primary_retain, "cuDevicePrimaryCtxRetain");
	RESOLVE(primary_release, "cuDevicePrimaryCtxRelease_v2");
	int shared = 0;
	carve_mem_acct = carve_account(ctl_dir, &shared);
	dir = strdup(ctl_dir);
	pthread_atfork(NULL, NULL, forked);
	__atomic_store_n(&carve_mem_on, 1, __ATOMIC_RELEASE);
	CARVE_DEBUG("device memory counted in %s, limit %llu bytes", shared ? "the tenant's account" : "this block",
		    (unsigned long long)carve_mem_limit());
}

/* At exit the driver frees what the process holds: it leaves the account
 * now, so that the tenant's other processes may have it. */
__attribute__((destructor)) static void carve_mem_exit(void)
{
	if (!__atomic_exchange_n(&carve_mem_on, 0, __ATOMIC_ACQ_REL))
		return;
	uint64_t n = __atomic_exchange_n(&carve_block->mem_used, 0, __ATOMIC_ACQ_REL);
	sub_sat(&carve_mem_acct->mem_total, n);
}
