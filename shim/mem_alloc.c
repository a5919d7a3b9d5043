/*
 * mem_alloc.c: the tenant's plain, pitched and managed allocations, its arrays,
 * and what the program is told of free and total memory (mem.c keeps the
 * account).
 *
 *   - cuMemAlloc, cuMemAllocPitch (both flavours), cuMemAllocManaged: the
 *     bytes asked (a pitch's rows by the pitch the driver chose), kept per
 *     address until cuMemFree; a free of an address not kept (memory of
 *     another path, or allocated before the shim) passes uncounted.
 *   - arrays and mipmapped arrays: their texels' bytes, by format; sparse
 *     and deferred-mapping arrays take none until mapped (cuMemCreate,
 *     mem_vmm.c).
 *   - cuMemGetInfo and cuDeviceTotalMem: a limited tenant is told its
 *     limit, and what it has left of it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* --- plain allocations --------------------------------------------------------- */

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_v1_fn)(unsigned *, unsigned);
typedef CUresult (*managed_fn)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*pitch_v1_fn)(unsigned *, unsigned *, unsigned, unsigned, unsigned);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_v1_fn)(unsigned);

/* allocated settles an allocation of n bytes charged before the driver's
 * call, which returned r and, if got, the address p: kept, or credited. */
static CUresult allocated(CUresult r, int got, uint64_t p, uint64_t n)
{
	if (r != CUDA_SUCCESS || !got) {
		carve_mem_credit(n);
		return r;
	}
	carve_mem_keep(MEM_PTR, p, n);
	return r;
}
CUresult carve_mem_alloc(void *real, CUdeviceptr *p, size_t n)
{
	if (!carve_mem_counting())
		return ((alloc_fn)real)(p, n);
	if (!carve_mem_charge_or_refuse(n))
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
	if (!carve_mem_counting())
		return ((alloc_fn)real)(p, n);
	if (!carve_mem_charge(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return allocated(((alloc_fn)real)(p, n), 1, *p, n);
}

CUresult carve_mem_alloc_v1(void *real, unsigned *p, unsigned n)
{
	if (!carve_mem_counting())
		return ((alloc_v1_fn)real)(p, n);
	if (!carve_mem_charge_or_refuse(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((alloc_v1_fn)real)(p, n);
	return allocated(r, p != NULL, p ? *p : 0, n);
}

CUresult carve_mem_alloc_managed(void *real, CUdeviceptr *p, size_t n, unsigned flags)
{
	if (!carve_mem_counting())
		return ((managed_fn)real)(p, n, flags);
	if (!carve_mem_charge_or_refuse(n))
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
		carve_mem_credit(guess);
		return r;
	}
	if (actual < guess) {
		carve_mem_credit(guess - actual);
	} else if (actual > guess && !carve_mem_charge_or_refuse(actual - guess)) {
		if (carve_mem_drv.mem_free)
			carve_mem_drv.mem_free(p);
		carve_mem_credit(guess);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	carve_mem_keep(MEM_PTR, p, actual);
	return CUDA_SUCCESS;
}

CUresult carve_mem_alloc_pitch(void *real, CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem)
{
	if (!carve_mem_counting())
		return ((pitch_fn)real)(p, pitch, w, h, elem);
	uint64_t guess = pitch_guess(w, h);
	if (!carve_mem_charge_or_refuse(guess))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = ((pitch_fn)real)(p, pitch, w, h, elem);
	int got = p && pitch;
	return pitch_trued(r, got, got ? *p : 0, guess, got ? (uint64_t)*pitch * h : 0);
}

CUresult carve_mem_alloc_pitch_v1(void *real, unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned elem)
{
	if (!carve_mem_counting())
		return ((pitch_v1_fn)real)(p, pitch, w, h, elem);
	uint64_t guess = pitch_guess(w, h);
	if (!carve_mem_charge_or_refuse(guess))
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
	if (!carve_mem_counting())
		return ((free_fn)real)(p);
	struct carve_mem_entry e;
	int kept = carve_mem_take(MEM_PTR, p, &e);
	return carve_mem_freed(((free_fn)real)(p), kept, &e);
}

CUresult carve_mem_free_v1(void *real, unsigned p)
{
	if (!carve_mem_counting())
		return ((free_v1_fn)real)(p);
	struct carve_mem_entry e;
	int kept = carve_mem_take(MEM_PTR, p, &e);
	return carve_mem_freed(((free_v1_fn)real)(p), kept, &e);
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
	uint64_t lim = carve_mem_counting() ? carve_mem_limit() : 0;
	if (!lim)
		return;
	uint64_t t = __atomic_load_n(&carve_mem_acct->mem_total, __ATOMIC_RELAXED);
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
	if (!carve_mem_counting() || !desc)
		return mip ? ((mipmap_fn)real)(a, desc, levels) : ((array_fn)real)(a, desc);
	if (!carve_mem_charge_or_refuse(bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult r = mip ? ((mipmap_fn)real)(a, desc, levels) : ((array_fn)real)(a, desc);
	if (r != CUDA_SUCCESS || !a) {
		carve_mem_credit(bytes);
		return r;
	}
	if (bytes)
		carve_mem_keep(mip ? MEM_MIPMAP : MEM_ARRAY, (uint64_t)(uintptr_t)*a, bytes);
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
	if (!carve_mem_counting())
		return ((destroy_fn)real)(a);
	struct carve_mem_entry e;
	int kept = carve_mem_take(kind, (uint64_t)(uintptr_t)a, &e);
	return carve_mem_freed(((destroy_fn)real)(a), kept, &e);
}

CUresult carve_mem_array_destroy(void *real, CUarray a)
{
	return array_gone(real, a, MEM_ARRAY);
}

CUresult carve_mem_mipmap_destroy(void *real, CUmipmappedArray a)
{
	return array_gone(real, a, MEM_MIPMAP);
}
