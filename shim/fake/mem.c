/*
 * mem.c: the fake driver's device memory: one account of what is taken
 * (of gpus.c's memory, or FAKECUDA_MEM_MB, or what fakecuda_mem_mb sets)
 * and the table of what is allocated, by address, that pools.c and vmm.c
 * share; plain, pitched and managed allocations and their 32-bit flavours
 * of CUDA before 3.2 (fakecuda_flavours), cuMemGetInfo and
 * cuDeviceTotalMem; arrays; the device malloc heap; IPC handles (opening
 * one takes nothing); and a destroyed context's memory freed. An
 * allocation past the memory fails with CUDA_ERROR_OUT_OF_MEMORY, and
 * fakecuda_mem says what is taken and the most that ever was.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake.h"

/* --- device memory ------------------------------------------------------------ */

pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mem_size; /* 0: not read yet */
static uint64_t mem_taken, mem_high;
int calls_v1, calls_v2; /* calls of the 32-bit and the later flavours */
static uint64_t next_va = 0x200000000000ull;
static uint64_t next_va32 = 0x10000000ull;

uint64_t round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

static uint64_t gpu_bytes(void) /* mem_mu held */
{
	if (!mem_size) {
		const char *e = getenv("FAKECUDA_MEM_MB");
		mem_size = (e ? strtoull(e, NULL, 10) : fake_mem_mb) * MIB;
	}
	return mem_size;
}

/* fakecuda_mem_mb sets the GPU's memory. */
void fakecuda_mem_mb(long long mb)
{
	pthread_mutex_lock(&mem_mu);
	mem_size = (uint64_t)mb * MIB;
	pthread_mutex_unlock(&mem_mu);
}

/* fakecuda_mem: out[0] the bytes taken now, out[1] the most ever taken. */
void fakecuda_mem(uint64_t out[2])
{
	pthread_mutex_lock(&mem_mu);
	out[0] = mem_taken, out[1] = mem_high;
	pthread_mutex_unlock(&mem_mu);
}

/* fakecuda_flavours: calls of the memory functions' 32-bit flavours
 * (out[0]) and of the later ones (out[1]). */
void fakecuda_flavours(int out[2])
{
	out[0] = __atomic_load_n(&calls_v1, __ATOMIC_RELAXED);
	out[1] = __atomic_load_n(&calls_v2, __ATOMIC_RELAXED);
}

int take(uint64_t n) /* mem_mu held */
{
	if (mem_taken + n > gpu_bytes())
		return 0;
	mem_taken += n;
	if (mem_taken > mem_high)
		mem_high = mem_taken;
	return 1;
}

void give(uint64_t n) /* mem_mu held */
{
	mem_taken -= n < mem_taken ? n : mem_taken;
}

uint64_t new_va(uint64_t n, int v1) /* mem_mu held */
{
	uint64_t *next = v1 ? &next_va32 : &next_va, va = *next;
	*next += round_up(n ? n : 1, 4096) + 4096;
	return va;
}

/* What is allocated, by address (or handle): a table under mem_mu (its
 * entries, struct fentry, are in fake.h). */
static struct fentry *fmap;
static size_t fcap, fcount;

static size_t fhash(uint64_t k)
{
	k ^= k >> 33, k *= 0xff51afd7ed558ccdull, k ^= k >> 33;
	return (size_t)k & (fcap - 1);
}

struct fentry *fmap_find(uint64_t key)
{
	if (!fcap)
		return NULL;
	for (size_t i = fhash(key);; i = (i + 1) & (fcap - 1)) {
		if (!fmap[i].kind)
			return NULL;
		if (fmap[i].key == key)
			return &fmap[i];
	}
}

void fmap_put(struct fentry e)
{
	if ((fcount + 1) * 2 > fcap) {
		struct fentry *old = fmap;
		size_t oldcap = fcap;
		fcap = fcap ? fcap * 2 : 64;
		fmap = calloc(fcap, sizeof *fmap);
		fcount = 0;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].kind)
				fmap_put(old[i]);
		free(old);
	}
	size_t i = fhash(e.key);
	while (fmap[i].kind && fmap[i].key != e.key)
		i = (i + 1) & (fcap - 1);
	if (!fmap[i].kind)
		fcount++;
	fmap[i] = e;
}

void fmap_erase(struct fentry *e)
{
	size_t i = (size_t)(e - fmap), j = i;
	fmap[i].kind = 0;
	fcount--;
	for (;;) {
		j = (j + 1) & (fcap - 1);
		if (!fmap[j].kind)
			return;
		size_t h = fhash(fmap[j].key);
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			fmap[i] = fmap[j];
			fmap[j].kind = 0;
			i = j;
		}
	}
}

static int alloc_plain(uint64_t *out, uint64_t n, int v1, int kind)
{
	if (error())
		return error();
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_mu);
	if (!take(n)) {
		pthread_mutex_unlock(&mem_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = new_va(n, v1);
	fmap_put((struct fentry){.key = *out, .size = n, .kind = kind, .ctx = current_slot()});
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

static int free_plain(uint64_t p, int kind)
{
	pthread_mutex_lock(&mem_mu);
	struct fentry *e = fmap_find(p);
	if (!e || e->kind != kind) {
		pthread_mutex_unlock(&mem_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	give(e->size);
	fmap_erase(e);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	COUNTED();
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	uint64_t v;
	int r = alloc_plain(&v, n, 0, F_PLAIN);
	if (!r)
		*p = v;
	return r;
}

int cuMemAlloc(unsigned *p, unsigned n)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	uint64_t v;
	int r = alloc_plain(&v, n, 1, F_PLAIN);
	if (!r)
		*p = (unsigned)v;
	return r;
}

int cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags)
{
	(void)flags;
	uint64_t v;
	int r = alloc_plain(&v, n, 0, F_PLAIN);
	if (!r)
		*p = v;
	return r;
}

/* A pitch is the width rounded up to 512 bytes. */
int cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem)
{
	(void)elem;
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	uint64_t v, pw = round_up(w, 512);
	int r = alloc_plain(&v, pw * h, 0, F_PLAIN);
	if (!r)
		*p = v, *pitch = pw;
	return r;
}

int cuMemAllocPitch(unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned elem)
{
	(void)elem;
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	uint64_t v, pw = round_up(w, 512);
	int r = alloc_plain(&v, pw * h, 1, F_PLAIN);
	if (!r)
		*p = (unsigned)v, *pitch = (unsigned)pw;
	return r;
}

int cuMemFree_v2(CUdeviceptr p)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	return free_plain(p, F_PLAIN);
}

int cuMemFree(unsigned p)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	return free_plain(p, F_PLAIN);
}

int cuMemGetInfo_v2(size_t *free, size_t *total)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*free = gpu_bytes() - mem_taken, *total = gpu_bytes();
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

static unsigned clamp32(uint64_t v)
{
	return v > 0xffffffffull ? 0xffffffffu : (unsigned)v;
}

int cuMemGetInfo(unsigned *free, unsigned *total)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*free = clamp32(gpu_bytes() - mem_taken), *total = clamp32(gpu_bytes());
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	(void)dev;
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*bytes = gpu_bytes();
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceTotalMem(unsigned *bytes, CUdevice dev)
{
	(void)dev;
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*bytes = clamp32(gpu_bytes());
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

/* --- arrays ---------------------------------------------------------------------- */

static uint64_t channel_bytes(int f)
{
	switch (f) {
	case 0x01: case 0x08:
		return 1;
	case 0x02: case 0x09: case 0x10:
		return 2;
	}
	return 4;
}

static uint64_t dim(uint64_t v, unsigned level)
{
	return v ? ((v >> level) ? (v >> level) : 1) : 1;
}

static uint64_t array_key(void *a) /* apart from addresses */
{
	return (uint64_t)(uintptr_t)a | 1ull << 63;
}

static int array_new(void **a, uint64_t bytes)
{
	if (error())
		return error();
	pthread_mutex_lock(&mem_mu);
	if (!take(bytes)) {
		pthread_mutex_unlock(&mem_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	void *h = malloc(1);
	fmap_put((struct fentry){.key = array_key(h), .size = bytes, .kind = F_ARRAY, .ctx = current_slot()});
	pthread_mutex_unlock(&mem_mu);
	*a = h;
	return 0;
}

static int array_free(void *a)
{
	int r = free_plain(array_key(a), F_ARRAY);
	if (!r)
		free(a);
	return r;
}

int cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	return array_new(a, d->Width * dim(d->Height, 0) * channel_bytes(d->Format) * d->NumChannels);
}

int cuArrayCreate(CUarray *a, const struct desc_v1 *d)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	return array_new(a, (uint64_t)d->Width * dim(d->Height, 0) * channel_bytes(d->Format) * d->NumChannels);
}

static uint64_t array3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return 0;
	int layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
	uint64_t b = 0;
	for (unsigned l = 0; l < (levels ? levels : 1); l++)
		b += dim(d->Width, l) * dim(d->Height, d->Height ? l : 0) * dim(d->Depth, layered ? 0 : l) *
		     channel_bytes(d->Format) * d->NumChannels;
	return b;
}

int cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	return array_new(a, array3d_bytes(d, 1));
}

int cuArray3DCreate(CUarray *a, const struct desc3d_v1 *d)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	CUDA_ARRAY3D_DESCRIPTOR d2 = {d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags};
	return array_new(a, array3d_bytes(&d2, 1));
}

int cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	return array_new(a, array3d_bytes(d, levels));
}

int cuArrayDestroy(CUarray a)
{
	return array_free(a);
}

int cuMipmappedArrayDestroy(CUmipmappedArray a)
{
	return array_free(a);
}

/* --- the device malloc heap, IPC, and contexts that go ------------------------------- */

static uint64_t heap[CTX_SLOTS]; /* 0: the default */

static uint64_t heap_of(int slot)
{
	return heap[slot] ? heap[slot] : HEAP_DEFAULT;
}

int cuCtxSetLimit(int what, size_t value)
{
	if (what != CU_LIMIT_MALLOC_HEAP_SIZE)
		return 0;
	int s = current_slot(), r = 0;
	pthread_mutex_lock(&mem_mu);
	uint64_t had = heap_of(s) > HEAP_DEFAULT ? heap_of(s) - HEAP_DEFAULT : 0;
	uint64_t want = value > HEAP_DEFAULT ? value - HEAP_DEFAULT : 0;
	if (want > had && !take(want - had))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (want < had)
		give(had - want);
	if (!r)
		heap[s] = value;
	pthread_mutex_unlock(&mem_mu);
	return r;
}

int cuCtxGetLimit(size_t *value, int what)
{
	*value = what == CU_LIMIT_MALLOC_HEAP_SIZE ? heap_of(current_slot()) : 0;
	return 0;
}

int cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr d)
{
	memset(h, 0, sizeof *h);
	memcpy(h->reserved, &d, sizeof d);
	return 0;
}

/* Opening another process's allocation takes none of this GPU's memory. */
int cuIpcOpenMemHandle_v2(CUdeviceptr *d, CUipcMemHandle h, unsigned flags)
{
	(void)flags;
	memcpy(d, h.reserved, sizeof *d);
	return 0;
}

int cuIpcCloseMemHandle(CUdeviceptr d)
{
	(void)d;
	return 0;
}

/* A destroyed context's allocations and heap go with it. */
void mem_context_gone(int slot)
{
	pthread_mutex_lock(&mem_mu);
	for (size_t i = 0; i < fcap;) {
		struct fentry *e = &fmap[i];
		if (e->kind && e->ctx == slot && (e->kind == F_PLAIN || e->kind == F_ARRAY)) {
			give(e->size);
			fmap_erase(e); /* another entry may have moved into i */
			continue;
		}
		i++;
	}
	uint64_t had = heap_of(slot) > HEAP_DEFAULT ? heap_of(slot) - HEAP_DEFAULT : 0;
	give(had);
	heap[slot] = 0;
	pthread_mutex_unlock(&mem_mu);
}
