/*
 * mem_ctx.c: what the tenant's contexts hold (mem.c keeps the account): the
 * device malloc heap (cuCtxSetLimit), charged with what it is set to
 * beyond the size the context had, per context; and a primary context
 * that a release or reset ends, whose memory mem.c credits as a destroyed
 * context's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* --- the device malloc heap --------------------------------------------------------- */

typedef CUresult (*set_limit_fn)(int, size_t);
static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;

CUresult carve_mem_set_limit(void *real, int what, size_t value)
{
	if (!carve_mem_counting() || what != CU_LIMIT_MALLOC_HEAP_SIZE)
		return ((set_limit_fn)real)(what, value);
	pthread_mutex_lock(&heap_mu);
	CUcontext c = carve_mem_ctx();
	struct carve_mem_entry e = {.key = (uint64_t)(uintptr_t)c, .ctx = c, .kind = MEM_HEAP};
	if (!carve_mem_get(MEM_HEAP, e.key, &e)) {
		size_t had = 0;
		if (carve_mem_drv.ctx_limit && carve_mem_drv.ctx_limit(&had, CU_LIMIT_MALLOC_HEAP_SIZE) == CUDA_SUCCESS)
			e.aux = had; /* the context's own: not counted */
	}
	uint64_t want = value > e.aux ? value - e.aux : 0;
	if (want > e.size && !carve_mem_charge_or_refuse(want - e.size)) {
		pthread_mutex_unlock(&heap_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	CUresult r = ((set_limit_fn)real)(what, value);
	if (r != CUDA_SUCCESS) {
		if (want > e.size)
			carve_mem_credit(want - e.size);
	} else {
		if (want < e.size)
			carve_mem_credit(e.size - want);
		e.size = want;
		carve_mem_put(&e);
	}
	pthread_mutex_unlock(&heap_mu);
	return r;
}

/* carve_mem_primary: the primary context of dev, if it is active (to be
 * credited if a release or reset ends it); NULL if not, or not known. */
CUcontext carve_mem_primary(CUdevice dev)
{
	unsigned flags;
	int active = 0;
	CUcontext c = NULL;
	if (!carve_mem_counting() || !carve_mem_drv.primary_state || !carve_mem_drv.primary_retain || !carve_mem_drv.primary_release ||
	    carve_mem_drv.primary_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
		return NULL;
	if (carve_mem_drv.primary_retain(&c, dev) != CUDA_SUCCESS)
		return NULL;
	carve_mem_drv.primary_release(dev);
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
	if (reset || (carve_mem_drv.primary_state && carve_mem_drv.primary_state(dev, &flags, &active) == CUDA_SUCCESS && !active))
		carve_mem_context_gone(c);
}
