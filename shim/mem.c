/*
 * mem.c: the tenant's device memory. Every driver call that takes device
 * memory is charged to the tenant's account before the driver is called,
 * and refused with CUDA_ERROR_OUT_OF_MEMORY where it would pass the limit;
 * every call that gives memory back is credited once the driver has freed
 * it. interpose.c's wrappers call in here with the driver's function.
 *
 * The account (carve_ctl.h, mem_*) is the block carve made for the tenant,
 * shared by all its processes (ctl.c's carve_account): mem_total there,
 * against mem_limit there, and each process's own bytes in its own
 * block's mem_used. Bytes go to mem_total before mem_used and leave
 * mem_used before mem_total, so a process killed between the two leaves
 * the account too high, never too low.
 *
 * What counts, and how:
 *   - cuMemAlloc, cuMemAllocPitch (both flavours), cuMemAllocManaged: the
 *     bytes asked (a pitch's rows by the pitch the driver chose), kept per
 *     address until cuMemFree; a free of an address not kept (memory of
 *     another path, or allocated before the shim) passes uncounted.
 *   - stream-ordered allocation: what pools hold, not what they hand out.
 *     A pool keeps memory after a free (up to its release threshold,
 *     which PyTorch sets to the maximum), so each pool's reserved bytes
 *     (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) are read after each
 *     allocation from it, after a trim or a release at a synchronization,
 *     and the account follows them. Under a limit, a pool's allocations
 *     are made one at a time, each charged beforehand with what may grow
 *     the pool: what its free bytes (what it reserves up to its release
 *     threshold, less what is in use) do not cover, rounded up to the 2 MiB
 *     a pool grows by; what it did grow by replaces that charge after.
 *     Host pools are not counted.
 *   - graphs: the device's graph memory (CU_GRAPH_MEM_ATTR_RESERVED_*),
 *     read after each launch or upload of a graph and after
 *     cuDeviceGraphMemTrim. A graph's allocation nodes are found when it is
 *     instantiated (captured allocations are nodes too), and under a limit
 *     its launches are charged beforehand, as a pool's allocations, with
 *     what the graph memory's free bytes do not cover. An allocation node
 *     must fit the limit when it is added.
 *   - arrays and mipmapped arrays: their texels' bytes, by format; sparse
 *     and deferred-mapping arrays take none until mapped (cuMemCreate).
 *   - the virtual memory API: cuMemCreate's bytes on a device, held until
 *     the handle is released and unmapped everywhere (cuMemRelease,
 *     cuMemUnmap, cuMemRetainAllocationHandle keep count); reserving
 *     addresses takes no memory.
 *   - the device malloc heap (cuCtxSetLimit): what it is set to beyond the
 *     size the context had, per context.
 *   - imports (cuIpcOpenMemHandle, cuMemImportFromShareableHandle,
 *     cuMemPoolImportPointer) pass uncounted: memory is charged to the
 *     process that allocated it.
 * Memory of a context that is destroyed (cuCtxDestroy, a primary context
 * reset or released for good) is credited with it. The context's own
 * memory (code, stacks, the default heap) is not counted: under MPS,
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT bounds it all.
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

#define POOL_GRAIN (2ull << 20) /* a pool grows by multiples of this */

/* --- the driver's functions mem.c calls itself ------------------------------ */

static struct {
	CUresult (*ctx_current)(CUcontext *);
	CUresult (*ctx_device)(CUdevice *);
	CUresult (*ctx_limit)(size_t *, int);
	CUresult (*device_pool)(CUmemoryPool *, CUdevice);
	CUresult (*pool_get)(CUmemoryPool, int, void *);
	CUresult (*pool_trim)(CUmemoryPool, size_t);
	CUresult (*graph_attr)(CUdevice, int, void *);
	CUresult (*graph_trim)(CUdevice);
	CUresult (*graph_nodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*node_type)(CUgraphNode, int *);
	CUresult (*alloc_params)(CUgraphNode, void *);
	CUresult (*child_graph)(CUgraphNode, CUgraph *);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*primary_state)(CUdevice, unsigned *, int *);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*primary_release)(CUdevice);
} drv;

static struct carve_ctl *acct; /* the tenant's account */
static char *dir;              /* the runtime directory, for ended processes */
static int on;                 /* counting: a block, the driver, not a forked child */

static inline int counting(void)
{
	return __atomic_load_n(&on, __ATOMIC_RELAXED);
}

static uint64_t limit(void)
{
	return __atomic_load_n(&acct->mem_limit, __ATOMIC_RELAXED);
}

static CUcontext current_ctx(void)
{
	CUcontext c = NULL;
	if (drv.ctx_current)
		drv.ctx_current(&c);
	return c;
}

static CUdevice current_device(void)
{
	CUdevice d = 0;
	if (!drv.ctx_device || drv.ctx_device(&d) != CUDA_SUCCESS)
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
	uint64_t p = __atomic_load_n(&acct->mem_peak, __ATOMIC_RELAXED);
	while (t > p && !__atomic_compare_exchange_n(&acct->mem_peak, &p, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* charge adds n bytes to the account unless that passes the limit;
 * 0 if it would. */
static int charge(uint64_t n)
{
	if (!n)
		return 1;
	uint64_t lim = limit(), t;
	if (!lim) {
		t = __atomic_add_fetch(&acct->mem_total, n, __ATOMIC_RELAXED);
	} else {
		t = __atomic_load_n(&acct->mem_total, __ATOMIC_RELAXED);
		do {
			if (t + n > lim || t + n < t)
				return 0;
		} while (!__atomic_compare_exchange_n(&acct->mem_total, &t, t + n, 0, __ATOMIC_RELAXED,
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
	raise_peak(__atomic_add_fetch(&acct->mem_total, n, __ATOMIC_RELAXED));
	__atomic_add_fetch(&carve_block->mem_used, n, __ATOMIC_RELAXED);
}

static void credit(uint64_t n)
{
	if (!n)
		return;
	sub_sat(&carve_block->mem_used, n);
	sub_sat(&acct->mem_total, n);
}

static void reclaim(void);

/* refused counts a refusal of n bytes, the tenant's in its account and
 * the process's in its block, and says so (the first time, or all under
 * CARVE_DEBUG). */
static void refused(uint64_t n)
{
	static int said;
	uint64_t now = carve_now_ns();
	uint64_t refused = __atomic_add_fetch(&acct->mem_refused, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&acct->mem_refused_ns, now, __ATOMIC_RELAXED);
	if (acct != carve_block) {
		__atomic_add_fetch(&carve_block->mem_refused, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&carve_block->mem_refused_ns, now, __ATOMIC_RELAXED);
	}
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) || carve_debug)
		carve_say("refused an allocation of %llu bytes (the tenant's refusal %llu): the tenant holds %llu of its "
			  "%llu-byte memory limit (carve ls shows its processes)",
			  (unsigned long long)n, (unsigned long long)refused,
			  (unsigned long long)__atomic_load_n(&acct->mem_total, __ATOMIC_RELAXED),
			  (unsigned long long)limit());
}

/* charge_or_refuse charges n, trimming pools and crediting the tenant's
 * ended processes first where the limit would be passed; 0: refused,
 * counted and said. */
static int charge_or_refuse(uint64_t n)
{
	if (charge(n))
		return 1;
	reclaim();
	if (charge(n))
		return 1;
	refused(n);
	return 0;
}

/* settle replaces what was charged beforehand (pre) by what the driver
 * took, in one step: the account never counts both. */
static void settle(uint64_t pre, uint64_t took)
{
	if (took > pre)
		charge_anyway(took - pre);
	else
		credit(pre - took);
}

/* fits says whether n more bytes would fit the limit now (a graph's
 * allocation node, which takes its memory at launch). */
static int fits(uint64_t n)
{
	if (!charge_or_refuse(n))
		return 0;
	credit(n);
	return 1;
}

/* --- what each allocation holds: a striped hash table ------------------------- */

enum kind { K_PTR = 1, K_ARRAY, K_MIPMAP, K_VMM, K_MAP, K_EXEC, K_HEAP };

struct entry {
	uint64_t key;
	uint64_t size;
	uint64_t aux;  /* K_MAP: the handle; K_HEAP: the size the context had */
	CUcontext ctx; /* K_PTR, K_ARRAY, K_MIPMAP, K_HEAP: credited when it goes */
	uint32_t kind; /* 0: empty */
	int32_t refs;  /* K_VMM: the handle's references and mappings */
	int32_t maps;
	int32_t pad;
};

#define STRIPES 64
static struct stripe {
	pthread_mutex_t mu;
	struct entry *e;
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
	struct entry *e = calloc(cap, sizeof *e), *old = s->e;
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

/* put keeps e (replacing what was kept under its kind and key). */
static void put(const struct entry *e)
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

/* take removes what was kept under kind and key into *out; 0 if nothing. */
static int take(uint32_t kind, uint64_t key, struct entry *out)
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

/* get copies what is kept under kind and key; 0 if nothing. */
static int get(uint32_t kind, uint64_t key, struct entry *out)
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

/* vmm_count moves a handle's references and mappings; when both are gone
 * the driver has freed it: its bytes are returned, to be credited. */
static uint64_t vmm_count(CUmemGenericAllocationHandle handle, int refs, int maps)
{
	uint64_t h = hash(K_VMM, handle), freed = 0;
	struct stripe *s = stripe_of(h);
	pthread_mutex_lock(&s->mu);
	int found = 0;
	if (s->cap) {
		uint32_t i = slot(s, h, K_VMM, handle, &found);
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
			struct entry *e = &s->e[i];
			if (e->kind && e->ctx == c &&
			    (e->kind == K_PTR || e->kind == K_ARRAY || e->kind == K_MIPMAP || e->kind == K_HEAP)) {
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

/* --- plain allocations --------------------------------------------------------- */

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_v1_fn)(unsigned *, unsigned);
typedef CUresult (*managed_fn)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*pitch_v1_fn)(unsigned *, unsigned *, unsigned, unsigned, unsigned);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_v1_fn)(unsigned);

static void keep(uint32_t kind, uint64_t key, uint64_t size)
{
	struct entry e = {.key = key, .size = size, .ctx = current_ctx(), .kind = kind};
	put(&e);
}

/* allocated settles an allocation of n bytes charged before the driver's
 * call, which returned r and, if got, the address p: kept, or credited. */
static CUresult allocated(CUresult r, int got, uint64_t p, uint64_t n)
{
	if (r != CUDA_SUCCESS || !got) {
		credit(n);
		return r;
	}
	keep(K_PTR, p, n);
	return r;
}

/* freed settles a free the driver answered with r, of the entry taken
 * from the table (if kept) before the call: credited, or put back. */
static CUresult freed(CUresult r, int kept, const struct entry *e)
{
	if (kept) {
		if (r == CUDA_SUCCESS)
			credit(e->size);
		else
			put(e);
	}
	return r;
}

CUresult carve_mem_alloc(void *real, CUdeviceptr *p, size_t n)
{
	if (!counting())
		return ((alloc_fn)real)(p, n);
	if (!charge_or_refuse(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((alloc_fn)real)(p, n);
	return allocated(r, p != NULL, p ? *p : 0, n);
}

/* carve_mem_alloc_own: memory the shim takes for the tenant's sake (the
 * copies of code slicing launches), charged to its account as its own
 * allocations are; past the limit it is not taken, and the refusal is
 * neither counted nor said (the caller does without it). */
CUresult carve_mem_alloc_own(void *real, CUdeviceptr *p, size_t n)
{
	if (!counting())
		return ((alloc_fn)real)(p, n);
	if (!charge(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return allocated(((alloc_fn)real)(p, n), 1, *p, n);
}

CUresult carve_mem_alloc_v1(void *real, unsigned *p, unsigned n)
{
	if (!counting())
		return ((alloc_v1_fn)real)(p, n);
	if (!charge_or_refuse(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((alloc_v1_fn)real)(p, n);
	return allocated(r, p != NULL, p ? *p : 0, n);
}

CUresult carve_mem_alloc_managed(void *real, CUdeviceptr *p, size_t n, unsigned flags)
{
	if (!counting())
		return ((managed_fn)real)(p, n, flags);
	if (!charge_or_refuse(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((managed_fn)real)(p, n, flags);
	return allocated(r, p != NULL, p ? *p : 0, n);
}

/* A pitched allocation is charged with rows rounded up to 512 bytes, the
 * pitch the driver picks on the GPUs carve knows, and trued up to the pitch
 * it did pick (pitch_trued, or credited if the driver made none); one that
 * then passes the limit is freed again. */
static uint64_t pitch_guess(uint64_t w, uint64_t h)
{
	return ((w + 511) & ~511ull) * h;
}

static CUresult pitch_trued(CUresult r, int got, CUdeviceptr p, uint64_t guess, uint64_t actual)
{
	if (r != CUDA_SUCCESS || !got) {
		credit(guess);
		return r;
	}
	if (actual < guess) {
		credit(guess - actual);
	} else if (actual > guess && !charge_or_refuse(actual - guess)) {
		if (drv.mem_free)
			drv.mem_free(p);
		credit(guess);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	keep(K_PTR, p, actual);
	return CUDA_SUCCESS;
}

CUresult carve_mem_alloc_pitch(void *real, CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem)
{
	if (!counting())
		return ((pitch_fn)real)(p, pitch, w, h, elem);
	uint64_t guess = pitch_guess(w, h);
	if (!charge_or_refuse(guess))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((pitch_fn)real)(p, pitch, w, h, elem);
	int got = p && pitch;
	return pitch_trued(r, got, got ? *p : 0, guess, got ? (uint64_t)*pitch * h : 0);
}

CUresult carve_mem_alloc_pitch_v1(void *real, unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned elem)
{
	if (!counting())
		return ((pitch_v1_fn)real)(p, pitch, w, h, elem);
	uint64_t guess = pitch_guess(w, h);
	if (!charge_or_refuse(guess))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((pitch_v1_fn)real)(p, pitch, w, h, elem);
	int got = p && pitch;
	return pitch_trued(r, got, got ? *p : 0, guess, got ? (uint64_t)*pitch * h : 0);
}

/* A free is credited once the driver has freed; the address leaves the
 * table before, so that an allocation the driver gives the same address
 * in between is not taken for it. */
CUresult carve_mem_free(void *real, CUdeviceptr p)
{
	if (!counting())
		return ((free_fn)real)(p);
	struct entry e;
	int kept = take(K_PTR, p, &e);
	return freed(((free_fn)real)(p), kept, &e);
}

CUresult carve_mem_free_v1(void *real, unsigned p)
{
	if (!counting())
		return ((free_v1_fn)real)(p);
	struct entry e;
	int kept = take(K_PTR, p, &e);
	return freed(((free_v1_fn)real)(p), kept, &e);
}

/* --- what the program is told ----------------------------------------------------- */

typedef CUresult (*info_fn)(size_t *, size_t *);
typedef CUresult (*info_v1_fn)(unsigned *, unsigned *);
typedef CUresult (*total_fn)(size_t *, CUdevice);
typedef CUresult (*total_v1_fn)(unsigned *, CUdevice);

/* told: what a limited tenant is told of free and total memory: the limit
 * less what it holds (no more than the GPU has free), and the limit. */
static void told(uint64_t *free, uint64_t *total)
{
	uint64_t lim = counting() ? limit() : 0;
	if (!lim)
		return;
	uint64_t t = __atomic_load_n(&acct->mem_total, __ATOMIC_RELAXED);
	uint64_t left = lim > t ? lim - t : 0;
	if (free && *free > left)
		*free = left;
	if (total && *total > lim)
		*total = lim;
}

CUresult carve_mem_info(void *real, size_t *free, size_t *total)
{
	CUresult r = ((info_fn)real)(free, total);
	if (r == CUDA_SUCCESS) {
		uint64_t f = free ? *free : 0, t = total ? *total : 0;
		told(free ? &f : NULL, total ? &t : NULL);
		if (free)
			*free = f;
		if (total)
			*total = t;
	}
	return r;
}

CUresult carve_mem_info_v1(void *real, unsigned *free, unsigned *total)
{
	CUresult r = ((info_v1_fn)real)(free, total);
	if (r == CUDA_SUCCESS) {
		uint64_t f = free ? *free : 0, t = total ? *total : 0;
		told(free ? &f : NULL, total ? &t : NULL);
		if (free)
			*free = (unsigned)f;
		if (total)
			*total = (unsigned)t;
	}
	return r;
}

CUresult carve_mem_total(void *real, size_t *bytes, CUdevice dev)
{
	CUresult r = ((total_fn)real)(bytes, dev);
	if (r == CUDA_SUCCESS && bytes) {
		uint64_t t = *bytes;
		told(NULL, &t);
		*bytes = t;
	}
	return r;
}

CUresult carve_mem_total_v1(void *real, unsigned *bytes, CUdevice dev)
{
	CUresult r = ((total_v1_fn)real)(bytes, dev);
	if (r == CUDA_SUCCESS && bytes) {
		uint64_t t = *bytes;
		told(NULL, &t);
		*bytes = (unsigned)t;
	}
	return r;
}

/* --- pools ------------------------------------------------------------------------- */

#define POOLS 64
static struct pool {
	CUmemoryPool h; /* NULL: a free slot */
	pthread_mutex_t mu;
	uint64_t charged;   /* the reserved bytes the account holds for it */
	uint64_t threshold; /* its release threshold */
	int counted;        /* 0: a pool of host memory */
} pools[POOLS];
static int npools; /* slots in use or used */
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pool_gen = 1; /* moves when a device's current pool may have */

static uint64_t pool_attr(CUmemoryPool h, int attr)
{
	uint64_t v = 0;
	if (drv.pool_get)
		drv.pool_get(h, attr, &v);
	return v;
}

/* find_pool returns the record of pool h, made if make (counted as asked). */
static struct pool *find_pool(CUmemoryPool h, int make, int counted)
{
	if (!h)
		return NULL;
	int n = __atomic_load_n(&npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&pools[i].h, __ATOMIC_ACQUIRE) == h)
			return &pools[i];
	if (!make)
		return NULL;
	pthread_mutex_lock(&pools_mu);
	struct pool *p = NULL, *free_slot = NULL;
	for (int i = 0; i < npools && !p; i++) {
		if (pools[i].h == h)
			p = &pools[i];
		else if (!pools[i].h && !free_slot)
			free_slot = &pools[i];
	}
	if (!p && !free_slot && npools < POOLS) {
		free_slot = &pools[npools];
		pthread_mutex_init(&free_slot->mu, NULL);
		__atomic_store_n(&npools, npools + 1, __ATOMIC_RELEASE);
	}
	if (!p && free_slot) {
		p = free_slot;
		pthread_mutex_lock(&p->mu);
		p->charged = 0;
		p->counted = counted;
		p->threshold = counted ? pool_attr(h, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) : 0;
		__atomic_store_n(&p->h, h, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_unlock(&pools_mu);
	if (!p)
		carve_say("more than %d memory pools: pool %p goes uncounted", POOLS, h);
	return p;
}

/* commit makes the account hold what pool p reserves now, less pre
 * charged for it beforehand (p locked). */
static void commit(struct pool *p, uint64_t pre)
{
	if (!p->h || !p->counted) {
		credit(pre);
		return;
	}
	uint64_t r = pool_attr(p->h, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
	settle(pre + p->charged, r);
	__atomic_store_n(&p->charged, r, __ATOMIC_RELAXED);
}

/* The current pool of the current context's device, as cuMemAllocAsync
 * allocates from, remembered by each thread for its context. */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext t_pool_ctx;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_pool_gen;
static __thread __attribute__((tls_model("initial-exec"))) struct pool *t_pool;

static struct pool *current_pool(void)
{
	CUcontext c = current_ctx();
	uint64_t g = __atomic_load_n(&pool_gen, __ATOMIC_ACQUIRE);
	if (c && c == t_pool_ctx && g == t_pool_gen)
		return t_pool;
	CUmemoryPool h = NULL;
	if (!drv.device_pool || drv.device_pool(&h, current_device()) != CUDA_SUCCESS)
		return NULL;
	t_pool = find_pool(h, 1, 1);
	t_pool_ctx = c, t_pool_gen = g;
	return t_pool;
}

/* Under a limit, the allocations from one pool are made one at a time:
 * pool_before locks the pool, and charges what the allocation may grow it
 * by: n less the pool's free bytes, rounded up to the POOL_GRAIN it grows
 * by, where free bytes are what it reserves up to its release threshold
 * (a synchronization may give the rest back at any time) less what is in
 * use. Trims, the pool's destruction and reclaim lock it too, so nothing
 * else takes those free bytes. 0: refused (and not locked). Without a
 * limit nothing is charged before; pool_after charges the growth. */
static int pool_before(struct pool *p, uint64_t n, uint64_t *pre, int *locked)
{
	*pre = 0, *locked = 0;
	if (!p || !p->counted || !limit())
		return 1;
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&p->mu);
		uint64_t r = pool_attr(p->h, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
		uint64_t u = pool_attr(p->h, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
		uint64_t kept = r < p->threshold ? r : p->threshold;
		uint64_t slack = kept > u ? kept - u : 0;
		uint64_t need = n > slack ? (n - slack + POOL_GRAIN - 1) & ~(POOL_GRAIN - 1) : 0;
		if (charge(need)) {
			*pre = need, *locked = 1;
			return 1;
		}
		pthread_mutex_unlock(&p->mu);
		if (tries) {
			refused(need);
			return 0;
		}
		reclaim();
	}
}

/* pool_after charges what the pool reserves now in place of what
 * pool_before charged, and unlocks it (locked: pool_before locked it). */
static void pool_after(struct pool *p, uint64_t pre, int locked)
{
	if (!p || !p->counted)
		return;
	if (!locked)
		pthread_mutex_lock(&p->mu);
	commit(p, pre);
	pthread_mutex_unlock(&p->mu);
}

typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

CUresult carve_mem_alloc_async(void *real, CUdeviceptr *d, size_t n, CUstream s)
{
	if (!counting())
		return ((alloc_async_fn)real)(d, n, s);
	struct pool *p = current_pool();
	uint64_t pre;
	int locked;
	if (!pool_before(p, n, &pre, &locked))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((alloc_async_fn)real)(d, n, s);
	pool_after(p, pre, locked);
	return r;
}

CUresult carve_mem_alloc_pool(void *real, CUdeviceptr *d, size_t n, CUmemoryPool h, CUstream s)
{
	if (!counting())
		return ((alloc_pool_fn)real)(d, n, h, s);
	struct pool *p = find_pool(h, 1, 1);
	uint64_t pre;
	int locked;
	if (!pool_before(p, n, &pre, &locked))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((alloc_pool_fn)real)(d, n, h, s);
	pool_after(p, pre, locked);
	return r;
}

/* An asynchronous free goes back to its pool, which keeps it; the pool is
 * read again where it may release memory (carve_mem_synced). A free of a
 * plain allocation is credited as cuMemFree's. */
CUresult carve_mem_free_async(void *real, CUdeviceptr d, CUstream s)
{
	if (!counting())
		return ((free_async_fn)real)(d, s);
	struct entry e;
	int kept = take(K_PTR, d, &e);
	return freed(((free_async_fn)real)(d, s), kept, &e);
}

/* carve_mem_synced: after a synchronization, pools holding more than their
 * release threshold have given memory back; read them again. */
void carve_mem_synced(void)
{
	if (!counting())
		return;
	int n = __atomic_load_n(&npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct pool *p = &pools[i];
		if (!__atomic_load_n(&p->h, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&p->charged, __ATOMIC_RELAXED) <= __atomic_load_n(&p->threshold, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&p->mu);
		commit(p, 0);
		pthread_mutex_unlock(&p->mu);
	}
}

typedef CUresult (*pool_create_fn)(CUmemoryPool *, const void *);
typedef CUresult (*pool_fn)(CUmemoryPool);
typedef CUresult (*pool_trim_fn)(CUmemoryPool, size_t);
typedef CUresult (*pool_set_fn)(CUmemoryPool, int, void *);
typedef CUresult (*device_set_pool_fn)(CUdevice, CUmemoryPool);

static int on_device(const void *props)
{
	int type;
	memcpy(&type, (const char *)props + CU_MEM_PROPS_LOCATION_TYPE_OFFSET, sizeof type);
	return type == CU_MEM_LOCATION_TYPE_DEVICE;
}

CUresult carve_mem_pool_create(void *real, CUmemoryPool *h, const void *props)
{
	CUresult r = ((pool_create_fn)real)(h, props);
	if (r == CUDA_SUCCESS && counting() && h && props)
		find_pool(*h, 1, on_device(props));
	return r;
}

CUresult carve_mem_pool_destroy(void *real, CUmemoryPool h)
{
	CUresult r = ((pool_fn)real)(h);
	struct pool *p;
	if (r != CUDA_SUCCESS || !counting() || !(p = find_pool(h, 0, 0)))
		return r;
	pthread_mutex_lock(&pools_mu);
	pthread_mutex_lock(&p->mu);
	if (p->h == h) {
		credit(p->charged);
		p->charged = 0;
		__atomic_store_n(&p->h, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&pools_mu);
	__atomic_add_fetch(&pool_gen, 1, __ATOMIC_RELEASE);
	return r;
}

CUresult carve_mem_pool_trim(void *real, CUmemoryPool h, size_t keep)
{
	struct pool *p = counting() ? find_pool(h, 0, 0) : NULL;
	if (!p)
		return ((pool_trim_fn)real)(h, keep);
	pthread_mutex_lock(&p->mu);
	CUresult r = ((pool_trim_fn)real)(h, keep);
	commit(p, 0);
	pthread_mutex_unlock(&p->mu);
	return r;
}

CUresult carve_mem_pool_set(void *real, CUmemoryPool h, int attr, void *value)
{
	CUresult r = ((pool_set_fn)real)(h, attr, value);
	struct pool *p;
	if (r == CUDA_SUCCESS && counting() && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD && value &&
	    (p = find_pool(h, 1, 1)))
		__atomic_store_n(&p->threshold, *(uint64_t *)value, __ATOMIC_RELAXED);
	return r;
}

CUresult carve_mem_device_pool(void *real, CUdevice dev, CUmemoryPool h)
{
	CUresult r = ((device_set_pool_fn)real)(dev, h);
	if (r == CUDA_SUCCESS && counting()) {
		find_pool(h, 1, 1);
		__atomic_add_fetch(&pool_gen, 1, __ATOMIC_RELEASE);
	}
	return r;
}

/* --- graphs ---------------------------------------------------------------------- */

#define DEVICES 32
static struct gdev {
	pthread_mutex_t mu;
	uint64_t charged; /* as a pool's */
} gdevs[DEVICES];
static pthread_once_t gdevs_once = PTHREAD_ONCE_INIT;
static int graphs_seen; /* a graph allocated memory: graph memory is read after launches */

static void gdevs_init(void)
{
	for (int i = 0; i < DEVICES; i++)
		pthread_mutex_init(&gdevs[i].mu, NULL);
}

static struct gdev *gdev_of(CUdevice d)
{
	return d >= 0 && d < DEVICES ? &gdevs[d] : NULL;
}

static uint64_t graph_attr(CUdevice d, int attr)
{
	uint64_t v = 0;
	if (drv.graph_attr)
		drv.graph_attr(d, attr, &v);
	return v;
}

static void graph_commit(CUdevice d, struct gdev *g, uint64_t pre) /* g locked */
{
	uint64_t r = graph_attr(d, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
	settle(pre + g->charged, r);
	__atomic_store_n(&g->charged, r, __ATOMIC_RELAXED);
}

/* footprint: the bytes of g's memory allocation nodes, its child graphs'
 * included. */
static uint64_t footprint(CUgraph g, int depth)
{
	size_t n = 0;
	if (!drv.graph_nodes || !drv.node_type || depth > 8 || drv.graph_nodes(g, NULL, &n) != CUDA_SUCCESS || !n)
		return 0;
	CUgraphNode *nodes = calloc(n, sizeof *nodes);
	if (!nodes)
		return 0;
	uint64_t bytes = 0;
	if (drv.graph_nodes(g, nodes, &n) == CUDA_SUCCESS) {
		for (size_t i = 0; i < n; i++) {
			int type = -1;
			if (drv.node_type(nodes[i], &type) != CUDA_SUCCESS)
				continue;
			if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && drv.alloc_params) {
				uint64_t params[32] = {0}; /* CUDA_MEM_ALLOC_NODE_PARAMS, with room */
				uint64_t size = 0;
				if (drv.alloc_params(nodes[i], params) == CUDA_SUCCESS)
					memcpy(&size, (char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, sizeof size);
				bytes += size;
			} else if (type == CU_GRAPH_NODE_TYPE_GRAPH && drv.child_graph) {
				CUgraph child = NULL;
				if (drv.child_graph(nodes[i], &child) == CUDA_SUCCESS && child)
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
	if (r != CUDA_SUCCESS || !counting() || !e)
		return r;
	uint64_t bytes = footprint(g, 0);
	if (bytes) {
		struct entry x = {.key = (uint64_t)(uintptr_t)*e, .size = bytes, .kind = K_EXEC};
		put(&x);
		__atomic_store_n(&graphs_seen, 1, __ATOMIC_RELEASE);
	}
	return r;
}

CUresult carve_mem_exec_destroy(void *real, CUgraphExec e)
{
	CUresult r = ((exec_fn)real)(e);
	struct entry x;
	if (r == CUDA_SUCCESS && counting())
		take(K_EXEC, (uint64_t)(uintptr_t)e, &x);
	return r;
}

/* An allocation node takes its memory when its graph is launched; it must
 * fit the limit now, on its own. */
CUresult carve_mem_alloc_node(void *real, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params)
{
	if (!counting() || !params)
		return ((alloc_node_fn)real)(node, g, deps, n, params);
	uint64_t bytes;
	memcpy(&bytes, (char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, sizeof bytes);
	if (!fits(bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	__atomic_store_n(&graphs_seen, 1, __ATOMIC_RELEASE);
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
	if (!counting() || !__atomic_load_n(&graphs_seen, __ATOMIC_ACQUIRE))
		return 1;
	l->device = current_device();
	l->seen = 1;
	struct entry x;
	struct gdev *g = gdev_of(l->device);
	if (!g || !limit() || !get(K_EXEC, (uint64_t)(uintptr_t)e, &x))
		return 1;
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&g->mu);
		uint64_t r = graph_attr(l->device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
		uint64_t u = graph_attr(l->device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
		uint64_t slack = r > u ? r - u : 0;
		uint64_t need = x.size > slack ? (x.size - slack + POOL_GRAIN - 1) & ~(POOL_GRAIN - 1) : 0;
		if (charge(need)) {
			l->pre = need;
			l->locked = 1;
			return 1;
		}
		pthread_mutex_unlock(&g->mu);
		if (tries) {
			refused(need);
			l->seen = 0;
			return 0;
		}
		reclaim();
	}
}

void carve_mem_graph_after(const struct carve_graph_launch *l)
{
	struct gdev *g;
	if (!l->seen || !(g = gdev_of(l->device)))
		return;
	if (!l->locked)
		pthread_mutex_lock(&g->mu);
	graph_commit(l->device, g, l->pre);
	pthread_mutex_unlock(&g->mu);
}

CUresult carve_mem_graph_trim(void *real, CUdevice d)
{
	struct gdev *g;
	if (!counting() || !(g = gdev_of(d)))
		return ((device_fn)real)(d);
	pthread_mutex_lock(&g->mu);
	CUresult r = ((device_fn)real)(d);
	graph_commit(d, g, 0);
	pthread_mutex_unlock(&g->mu);
	return r;
}

/* --- reclaiming before a refusal ------------------------------------------------- */

/* reclaim gives back what pools and graph memory hold unused, reads them
 * again, and credits what the tenant's ended processes held. It is called
 * with no pool's lock held. */
static void reclaim(void)
{
	int n = __atomic_load_n(&npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct pool *p = &pools[i];
		if (!__atomic_load_n(&p->h, __ATOMIC_ACQUIRE) || !p->counted)
			continue;
		pthread_mutex_lock(&p->mu);
		if (p->h && drv.pool_trim) {
			drv.pool_trim(p->h, 0);
			commit(p, 0);
		}
		pthread_mutex_unlock(&p->mu);
	}
	if (__atomic_load_n(&graphs_seen, __ATOMIC_ACQUIRE)) {
		CUdevice d = current_device();
		struct gdev *g = gdev_of(d);
		if (g) {
			pthread_mutex_lock(&g->mu);
			if (drv.graph_trim)
				drv.graph_trim(d);
			graph_commit(d, g, 0);
			pthread_mutex_unlock(&g->mu);
		}
	}
	carve_credit_ended(acct, dir);
}

/* --- arrays ------------------------------------------------------------------------ */

/* texel16: sixteen texels' bytes in format f with ch channels. */
static uint64_t texel16(int f, unsigned ch)
{
	switch (f) {
	case 0x01: case 0x08: case 0xc0: case 0xc1: case 0xc2: case 0xc6: case 0xc7: case 0xc8:
		return 16ull * ch; /* 8-bit channels */
	case 0x02: case 0x09: case 0x10: case 0xc3: case 0xc4: case 0xc5: case 0xc9: case 0xca: case 0xcb:
		return 32ull * ch; /* 16-bit */
	case 0x91: case 0x92: case 0x97: case 0x98:
		return 8; /* BC1, BC4: 8 bytes a 4x4 block */
	case 0x93: case 0x94: case 0x95: case 0x96: case 0x99: case 0x9a: case 0x9b: case 0x9c: case 0x9d: case 0x9e:
		return 16; /* BC2, BC3, BC5, BC6H, BC7: 16 bytes a block */
	case 0xb0:
		return 24; /* NV12: a byte of luma, half of chroma */
	}
	return 64ull * (ch ? ch : 1); /* 32-bit channels, and formats carve does not know */
}

/* array_bytes: the texels' bytes of an array (3D descriptor; height and
 * depth 0 for fewer dimensions) with levels mipmap levels. */
static uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return 0;
	int layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
	uint64_t per16 = texel16(d->Format, d->NumChannels), bytes = 0;
	for (unsigned l = 0; l < (levels ? levels : 1); l++) {
		uint64_t w = d->Width >> l, h = d->Height >> l, z = layered ? d->Depth : d->Depth >> l;
		w = w ? w : 1;
		h = d->Height ? (h ? h : 1) : 1;
		z = d->Depth ? (z ? z : 1) : 1;
		bytes += (w * h * z * per16 + 15) / 16;
	}
	return bytes;
}

typedef CUresult (*array_fn)(void **, const void *);
typedef CUresult (*mipmap_fn)(void **, const void *, unsigned);
typedef CUresult (*destroy_fn)(void *);

static CUresult array(void *real, void **a, const void *desc, uint64_t bytes, int mip, unsigned levels)
{
	if (!counting() || !desc)
		return mip ? ((mipmap_fn)real)(a, desc, levels) : ((array_fn)real)(a, desc);
	if (!charge_or_refuse(bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = mip ? ((mipmap_fn)real)(a, desc, levels) : ((array_fn)real)(a, desc);
	if (r != CUDA_SUCCESS || !a) {
		credit(bytes);
		return r;
	}
	if (bytes)
		keep(mip ? K_MIPMAP : K_ARRAY, (uint64_t)(uintptr_t)*a, bytes);
	return r;
}

CUresult carve_mem_array(void *real, CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
	CUDA_ARRAY3D_DESCRIPTOR d3 = {0};
	if (d)
		d3 = (CUDA_ARRAY3D_DESCRIPTOR){d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
	return array(real, a, d, d ? array_bytes(&d3, 1) : 0, 0, 0);
}

CUresult carve_mem_array3d(void *real, CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	return array(real, a, d, d ? array_bytes(d, 1) : 0, 0, 0);
}

CUresult carve_mem_mipmap(void *real, CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	return array(real, a, d, d ? array_bytes(d, levels) : 0, 1, levels);
}

static CUresult array_gone(void *real, void *a, uint32_t kind)
{
	if (!counting())
		return ((destroy_fn)real)(a);
	struct entry e;
	int kept = take(kind, (uint64_t)(uintptr_t)a, &e);
	return freed(((destroy_fn)real)(a), kept, &e);
}

CUresult carve_mem_array_destroy(void *real, CUarray a)
{
	return array_gone(real, a, K_ARRAY);
}

CUresult carve_mem_mipmap_destroy(void *real, CUmipmappedArray a)
{
	return array_gone(real, a, K_MIPMAP);
}

/* --- the virtual memory API ---------------------------------------------------------- */

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const void *, unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*retain_fn)(CUmemGenericAllocationHandle *, void *);

CUresult carve_mem_create(void *real, CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	if (!counting() || !prop || !on_device(prop))
		return ((create_fn)real)(h, n, prop, flags);
	if (!charge_or_refuse(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((create_fn)real)(h, n, prop, flags);
	if (r != CUDA_SUCCESS || !h) {
		credit(n);
		return r;
	}
	struct entry e = {.key = *h, .size = n, .kind = K_VMM, .refs = 1};
	put(&e);
	return r;
}

CUresult carve_mem_release(void *real, CUmemGenericAllocationHandle h)
{
	CUresult r = ((release_fn)real)(h);
	if (r == CUDA_SUCCESS && counting())
		credit(vmm_count(h, -1, 0));
	return r;
}

CUresult carve_mem_map(void *real, CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags)
{
	CUresult r = ((map_fn)real)(p, n, off, h, flags);
	struct entry e;
	if (r == CUDA_SUCCESS && counting() && get(K_VMM, h, &e)) {
		struct entry m = {.key = p, .size = n, .aux = h, .kind = K_MAP};
		put(&m);
		vmm_count(h, 0, 1);
	}
	return r;
}

/* An unmap may cover several mappings side by side; they leave the table
 * before the driver unmaps, and come back if it does not. */
CUresult carve_mem_unmap(void *real, CUdeviceptr p, size_t n)
{
	if (!counting())
		return ((unmap_fn)real)(p, n);
	struct entry one, *maps = &one;
	size_t k = 0, cap = 1;
	for (CUdeviceptr at = p; at < p + n;) {
		if (k == cap) {
			struct entry *more = malloc(2 * cap * sizeof *more);
			if (!more)
				break;
			memcpy(more, maps, k * sizeof *more);
			if (maps != &one)
				free(maps);
			maps = more, cap *= 2;
		}
		if (!take(K_MAP, at, &maps[k]) || !maps[k].size)
			break;
		at += maps[k++].size;
	}
	CUresult r = ((unmap_fn)real)(p, n);
	for (size_t i = 0; i < k; i++) {
		if (r == CUDA_SUCCESS)
			credit(vmm_count(maps[i].aux, 0, -1));
		else
			put(&maps[i]);
	}
	if (maps != &one)
		free(maps);
	return r;
}

CUresult carve_mem_retain(void *real, CUmemGenericAllocationHandle *h, void *addr)
{
	CUresult r = ((retain_fn)real)(h, addr);
	if (r == CUDA_SUCCESS && counting() && h)
		vmm_count(*h, 1, 0);
	return r;
}

/* --- the device malloc heap --------------------------------------------------------- */

typedef CUresult (*set_limit_fn)(int, size_t);
static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;

CUresult carve_mem_set_limit(void *real, int what, size_t value)
{
	if (!counting() || what != CU_LIMIT_MALLOC_HEAP_SIZE)
		return ((set_limit_fn)real)(what, value);
	pthread_mutex_lock(&heap_mu);
	CUcontext c = current_ctx();
	struct entry e = {.key = (uint64_t)(uintptr_t)c, .ctx = c, .kind = K_HEAP};
	if (!get(K_HEAP, e.key, &e)) {
		size_t had = 0;
		if (drv.ctx_limit && drv.ctx_limit(&had, CU_LIMIT_MALLOC_HEAP_SIZE) == CUDA_SUCCESS)
			e.aux = had; /* the context's own: not counted */
	}
	uint64_t want = value > e.aux ? value - e.aux : 0;
	if (want > e.size && !charge_or_refuse(want - e.size)) {
		pthread_mutex_unlock(&heap_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	CUresult r = ((set_limit_fn)real)(what, value);
	if (r != CUDA_SUCCESS) {
		if (want > e.size)
			credit(want - e.size);
	} else {
		if (want < e.size)
			credit(e.size - want);
		e.size = want;
		put(&e);
	}
	pthread_mutex_unlock(&heap_mu);
	return r;
}

/* --- contexts that go --------------------------------------------------------------- */

/* carve_mem_context_gone credits the memory of context c, which the driver
 * freed with it, and reads pools and graph memory again. */
void carve_mem_context_gone(CUcontext c)
{
	if (!counting() || !c)
		return;
	credit(drop_context(c));
	__atomic_add_fetch(&pool_gen, 1, __ATOMIC_RELEASE);
	int n = __atomic_load_n(&npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&pools[i].mu);
		commit(&pools[i], 0);
		pthread_mutex_unlock(&pools[i].mu);
	}
	if (__atomic_load_n(&graphs_seen, __ATOMIC_ACQUIRE)) {
		for (int d = 0; d < DEVICES; d++) {
			if (!__atomic_load_n(&gdevs[d].charged, __ATOMIC_RELAXED))
				continue;
			pthread_mutex_lock(&gdevs[d].mu);
			graph_commit(d, &gdevs[d], 0);
			pthread_mutex_unlock(&gdevs[d].mu);
		}
	}
}

/* carve_mem_primary: the primary context of dev, if it is active (to be
 * credited if a release or reset ends it); NULL if not, or not known. */
CUcontext carve_mem_primary(CUdevice dev)
{
	unsigned flags;
	int active = 0;
	CUcontext c = NULL;
	if (!counting() || !drv.primary_state || !drv.primary_retain || !drv.primary_release ||
	    drv.primary_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
		return NULL;
	if (drv.primary_retain(&c, dev) != CUDA_SUCCESS)
		return NULL;
	drv.primary_release(dev);
	return c;
}

/* carve_mem_primary_after: after a release (reset 0) or reset of dev's
 * primary context c, credit it if it is gone. */
void carve_mem_primary_after(CUdevice dev, CUcontext c, int reset)
{
	unsigned flags;
	int active = 1;
	if (!c)
		return;
	if (reset || (drv.primary_state && drv.primary_state(dev, &flags, &active) == CUDA_SUCCESS && !active))
		carve_mem_context_gone(c);
}

/* --- start and end --------------------------------------------------------------------- */

static void forked(void)
{
	__atomic_store_n(&on, 0, __ATOMIC_RELAXED); /* the parent's block is not ours */
}

#define RESOLVE(field, name) drv.field = (__typeof__(drv.field))carve_real_dlsym(cuda, name)

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
	acct = carve_account(ctl_dir, &shared);
	dir = strdup(ctl_dir);
	pthread_atfork(NULL, NULL, forked);
	__atomic_store_n(&on, 1, __ATOMIC_RELEASE);
	CARVE_DEBUG("device memory counted in %s, limit %llu bytes", shared ? "the tenant's account" : "this block",
		    (unsigned long long)limit());
}

/* At exit the driver frees what the process holds: it leaves the account
 * now, so that the tenant's other processes may have it. */
__attribute__((destructor)) static void carve_mem_exit(void)
{
	if (!__atomic_exchange_n(&on, 0, __ATOMIC_ACQ_REL))
		return;
	uint64_t n = __atomic_exchange_n(&carve_block->mem_used, 0, __ATOMIC_ACQ_REL);
	sub_sat(&acct->mem_total, n);
}
