/*
 * mem_pool.c: stream-ordered allocation: what the tenant's pools hold, not
 * what they hand out (mem.c keeps the account, and each pool's record).
 * A pool keeps memory after a free (up to its release threshold, which
 * PyTorch sets to the maximum), so each pool's reserved bytes
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) are read after each allocation
 * from it, after a trim or a release at a synchronization, and the
 * account follows them. Under a limit, a pool's allocations are made one
 * at a time, each charged beforehand with what may grow the pool: what its
 * free bytes (what it reserves up to its release threshold, less what is
 * in use) do not cover, rounded up to the 2 MiB a pool grows by; what it
 * did grow by replaces that charge after. Host pools are not counted.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* The current pool of the current context's device, as cuMemAllocAsync
 * allocates from, remembered by each thread for its context. */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext t_pool_ctx;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_pool_gen;
static __thread __attribute__((tls_model("initial-exec"))) struct carve_mem_pool *t_pool;

static struct carve_mem_pool *current_pool(void)
{
	CUcontext c = carve_mem_ctx();
	uint64_t g = __atomic_load_n(&carve_mem_pool_gen, __ATOMIC_ACQUIRE);
	if (c && c == t_pool_ctx && g == t_pool_gen)
		return t_pool;
	CUmemoryPool h = NULL;
	if (!carve_mem_drv.device_pool || carve_mem_drv.device_pool(&h, carve_mem_device()) != CUDA_SUCCESS)
		return NULL;
	t_pool = carve_mem_find_pool(h, 1, 1);
	t_pool_ctx = c, t_pool_gen = g;
	return t_pool;
}

/* Under a limit, the allocations from one pool are made one at a time:
 * pool_before locks the pool, and charges what the allocation may grow it
 * by: n less the pool's free bytes, rounded up to the CARVE_MEM_GRAIN it grows
 * by, where free bytes are what it reserves up to its release threshold
 * (a synchronization may give the rest back at any time) less what is in
 * use. Trims, the pool's destruction and reclaim lock it too, so nothing
 * else takes those free bytes. 0: refused (and not locked). Without a
 * limit nothing is charged before; pool_after charges the growth. */
static int pool_before(struct carve_mem_pool *p, uint64_t n, uint64_t *pre, int *locked)
{
	*pre = 0, *locked = 0;
	if (!p || !p->counted || !carve_mem_limit())
		return 1;
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&p->mu);
		uint64_t r = carve_mem_pool_attr(p->h, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
		uint64_t u = carve_mem_pool_attr(p->h, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
		uint64_t kept = r < p->threshold ? r : p->threshold;
		uint64_t slack = kept > u ? kept - u : 0;
		uint64_t need = n > slack ? (n - slack + CARVE_MEM_GRAIN - 1) & ~(CARVE_MEM_GRAIN - 1) : 0;
		if (carve_mem_charge(need)) {
			*pre = need, *locked = 1;
			return 1;
		}
		pthread_mutex_unlock(&p->mu);
		if (tries) {
			carve_mem_refused(need);
			return 0;
		}
		carve_mem_reclaim();
	}
}

/* pool_after charges what the pool reserves now in place of what
 * pool_before charged, and unlocks it (locked: pool_before locked it). */
static void pool_after(struct carve_mem_pool *p, uint64_t pre, int locked)
{
	if (!p || !p->counted)
		return;
	if (!locked)
		pthread_mutex_lock(&p->mu);
	carve_mem_pool_commit(p, pre);
	pthread_mutex_unlock(&p->mu);
}

typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

CUresult carve_mem_alloc_async(void *real, CUdeviceptr *d, size_t n, CUstream s)
{
	if (!carve_mem_counting())
		return ((alloc_async_fn)real)(d, n, s);
	struct carve_mem_pool *p = current_pool();
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
	if (!carve_mem_counting())
		return ((alloc_pool_fn)real)(d, n, h, s);
	struct carve_mem_pool *p = carve_mem_find_pool(h, 1, 1);
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
	if (!carve_mem_counting())
		return ((free_async_fn)real)(d, s);
	struct carve_mem_entry e;
	int kept = carve_mem_take(MEM_PTR, d, &e);
	return carve_mem_freed(((free_async_fn)real)(d, s), kept, &e);
}

/* carve_mem_synced: after a synchronization, pools holding more than their
 * release threshold have given memory back; read them again. */
void carve_mem_synced(void)
{
	if (!carve_mem_counting())
		return;
	int n = __atomic_load_n(&carve_mem_npools, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct carve_mem_pool *p = &carve_mem_pools[i];
		if (!__atomic_load_n(&p->h, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&p->charged, __ATOMIC_RELAXED) <= __atomic_load_n(&p->threshold, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&p->mu);
		carve_mem_pool_commit(p, 0);
		pthread_mutex_unlock(&p->mu);
	}
}

typedef CUresult (*pool_create_fn)(CUmemoryPool *, const void *);
typedef CUresult (*pool_fn)(CUmemoryPool);
typedef CUresult (*pool_trim_fn)(CUmemoryPool, size_t);
typedef CUresult (*pool_set_fn)(CUmemoryPool, int, void *);
typedef CUresult (*device_set_pool_fn)(CUdevice, CUmemoryPool);

CUresult carve_mem_pool_create(void *real, CUmemoryPool *h, const void *props)
{
	CUresult r = ((pool_create_fn)real)(h, props);
	if (r == CUDA_SUCCESS && carve_mem_counting() && h && props)
		carve_mem_find_pool(*h, 1, carve_mem_on_device(props));
	return r;
}

CUresult carve_mem_pool_destroy(void *real, CUmemoryPool h)
{
	CUresult r = ((pool_fn)real)(h);
	struct carve_mem_pool *p;
	if (r != CUDA_SUCCESS || !carve_mem_counting() || !(p = carve_mem_find_pool(h, 0, 0)))
		return r;
	pthread_mutex_lock(&carve_mem_pools_mu);
	pthread_mutex_lock(&p->mu);
	if (p->h == h) {
		carve_mem_credit(p->charged);
		p->charged = 0;
		__atomic_store_n(&p->h, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&carve_mem_pools_mu);
	__atomic_add_fetch(&carve_mem_pool_gen, 1, __ATOMIC_RELEASE);
	return r;
}

CUresult carve_mem_pool_trim(void *real, CUmemoryPool h, size_t keep)
{
	struct carve_mem_pool *p = carve_mem_counting() ? carve_mem_find_pool(h, 0, 0) : NULL;
	if (!p)
		return ((pool_trim_fn)real)(h, keep);
	pthread_mutex_lock(&p->mu);
	CUresult r = ((pool_trim_fn)real)(h, keep);
	carve_mem_pool_commit(p, 0);
	pthread_mutex_unlock(&p->mu);
	return r;
}

CUresult carve_mem_pool_set(void *real, CUmemoryPool h, int attr, void *value)
{
	CUresult r = ((pool_set_fn)real)(h, attr, value);
	struct carve_mem_pool *p;
	if (r == CUDA_SUCCESS && carve_mem_counting() && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD && value &&
	    (p = carve_mem_find_pool(h, 1, 1)))
		__atomic_store_n(&p->threshold, *(uint64_t *)value, __ATOMIC_RELAXED);
	return r;
}

CUresult carve_mem_device_pool(void *real, CUdevice dev, CUmemoryPool h)
{
	CUresult r = ((device_set_pool_fn)real)(dev, h);
	if (r == CUDA_SUCCESS && carve_mem_counting()) {
		carve_mem_find_pool(h, 1, 1);
		__atomic_add_fetch(&carve_mem_pool_gen, 1, __ATOMIC_RELEASE);
	}
	return r;
}
