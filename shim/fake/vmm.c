/*
 * vmm.c: the fake driver's virtual memory API: a handle (cuMemCreate) takes
 * device memory, unless it is of the host, until it is released and
 * unmapped everywhere; an address range is reserved apart from it, and a
 * mapping is an entry of mem.c's table that points at its handle.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake.h"

/* --- the virtual memory API ------------------------------------------------------ */

struct fvmm {
	uint64_t size;
	int refs, maps, host;
};

static void vmm_maybe_free(struct fvmm *v) /* mem_mu held */
{
	if (v->refs > 0 || v->maps > 0)
		return;
	if (!v->host)
		give(v->size);
	free(v);
}

int cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	(void)flags;
	int type;
	memcpy(&type, (const char *)prop + CU_MEM_PROPS_LOCATION_TYPE_OFFSET, sizeof type);
	struct fvmm *v = calloc(1, sizeof *v);
	v->size = n, v->refs = 1, v->host = type != CU_MEM_LOCATION_TYPE_DEVICE;
	pthread_mutex_lock(&mem_mu);
	if (!v->host && !take(n)) {
		pthread_mutex_unlock(&mem_mu);
		free(v);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&mem_mu);
	*h = (CUmemGenericAllocationHandle)(uintptr_t)v;
	return 0;
}

int cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct fvmm *v = (struct fvmm *)(uintptr_t)h;
	pthread_mutex_lock(&mem_mu);
	v->refs--;
	vmm_maybe_free(v);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags)
{
	(void)align, (void)addr, (void)flags;
	pthread_mutex_lock(&mem_mu);
	*p = new_va(n, 0);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemAddressFree(CUdeviceptr p, size_t n)
{
	(void)p, (void)n;
	return 0;
}

int cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags)
{
	(void)off, (void)flags;
	struct fvmm *v = (struct fvmm *)(uintptr_t)h;
	pthread_mutex_lock(&mem_mu);
	v->maps++;
	fmap_put((struct fentry){.key = p, .size = n, .owner = v, .kind = F_MAPPING});
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemUnmap(CUdeviceptr p, size_t n)
{
	pthread_mutex_lock(&mem_mu);
	for (CUdeviceptr at = p; at < p + n;) {
		struct fentry *e = fmap_find(at);
		if (!e || e->kind != F_MAPPING)
			break;
		struct fvmm *v = e->owner;
		at += e->size;
		fmap_erase(e);
		v->maps--;
		vmm_maybe_free(v);
	}
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemSetAccess(CUdeviceptr p, size_t n, const void *desc, size_t count)
{
	(void)p, (void)n, (void)desc, (void)count;
	return 0;
}

int cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
	pthread_mutex_lock(&mem_mu);
	struct fentry *e = fmap_find((uint64_t)(uintptr_t)addr);
	int r = CUDA_ERROR_INVALID_VALUE;
	if (e && e->kind == F_MAPPING) {
		((struct fvmm *)e->owner)->refs++;
		*h = (CUmemGenericAllocationHandle)(uintptr_t)e->owner;
		r = 0;
	}
	pthread_mutex_unlock(&mem_mu);
	return r;
}
