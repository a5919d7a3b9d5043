/*
 * mem_vmm.c: the virtual memory API's device memory (mem.c keeps the
 * account): cuMemCreate's bytes on a device, held until the handle is
 * released and unmapped everywhere (cuMemRelease, cuMemUnmap,
 * cuMemRetainAllocationHandle keep count in the table); reserving
 * addresses takes no memory.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const void *, unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*retain_fn)(CUmemGenericAllocationHandle *, void *);

CUresult carve_mem_create(void *real, CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	if (!carve_mem_counting() || !prop || !carve_mem_on_device(prop))
		return ((create_fn)real)(h, n, prop, flags);
	if (!carve_mem_charge_or_refuse(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((create_fn)real)(h, n, prop, flags);
	if (r != CUDA_SUCCESS || !h) {
		carve_mem_credit(n);
		return r;
	}
	struct carve_mem_entry e = {.key = *h, .size = n, .kind = MEM_VMM, .refs = 1};
	carve_mem_put(&e);
	return r;
}

CUresult carve_mem_release(void *real, CUmemGenericAllocationHandle h)
{
	CUresult r = ((release_fn)real)(h);
	if (r == CUDA_SUCCESS && carve_mem_counting())
		carve_mem_credit(carve_mem_vmm_count(h, -1, 0));
	return r;
}

CUresult carve_mem_map(void *real, CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags)
{
	CUresult r = ((map_fn)real)(p, n, off, h, flags);
	struct carve_mem_entry e;
	if (r == CUDA_SUCCESS && carve_mem_counting() && carve_mem_get(MEM_VMM, h, &e)) {
		struct carve_mem_entry m = {.key = p, .size = n, .aux = h, .kind = MEM_MAP};
		carve_mem_put(&m);
		carve_mem_vmm_count(h, 0, 1);
	}
	return r;
}

/* An unmap may cover several mappings side by side; they leave the table
 * before the driver unmaps, and come back if it does not. */
CUresult carve_mem_unmap(void *real, CUdeviceptr p, size_t n)
{
	if (!carve_mem_counting())
		return ((unmap_fn)real)(p, n);
	struct carve_mem_entry one, *maps = &one;
	size_t k = 0, cap = 1;
	for (CUdeviceptr at = p; at < p + n;) {
		if (k == cap) {
			struct carve_mem_entry *more = malloc(2 * cap * sizeof *more);
			if (!more)
				break;
			memcpy(more, maps, k * sizeof *more);
			if (maps != &one)
				free(maps);
			maps = more, cap *= 2;
		}
		if (!carve_mem_take(MEM_MAP, at, &maps[k]) || !maps[k].size)
			break;
		at += maps[k++].size;
	}
	CUresult r = ((unmap_fn)real)(p, n);
	for (size_t i = 0; i < k; i++) {
		if (r == CUDA_SUCCESS)
			carve_mem_credit(carve_mem_vmm_count(maps[i].aux, 0, -1));
		else
			carve_mem_put(&maps[i]);
	}
	if (maps != &one)
		free(maps);
	return r;
}

CUresult carve_mem_retain(void *real, CUmemGenericAllocationHandle *h, void *addr)
{
	CUresult r = ((retain_fn)real)(h, addr);
	if (r == CUDA_SUCCESS && carve_mem_counting() && h)
		carve_mem_vmm_count(*h, 1, 0);
	return r;
}
