/*
 * devices.c: the fake driver's devices and contexts. Devices are ordinals
 * as the program sees them: with CUDA_VISIBLE_DEVICES ("1,0", "1"), ordinal
 * i is the GPU (of gpus.c) it names i-th, as the driver's does. A context
 * is a slot, named (CUcontext)(0xc0 + slot): 0xc0 and 0xc1 are the primary
 * contexts of devices 0 and 1, the rest made by cuCtxCreate, the lowest
 * free slot first (so a handle destroyed comes back); each thread starts
 * with 0xc0 current, and cuCtxPushCurrent and cuCtxPopCurrent keep a stack
 * of them for each thread. And every call carve's own Go code binds
 * (internal/cuda), so that carve itself runs on the fake: the devices,
 * their names, their primary contexts, and the rest refusing with
 * CUDA_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake.h"

int ctx_dev[CTX_SLOTS] = {0, 1, -1, -1, -1, -1, -1, -1}; /* -1: free */
__thread CUcontext current_ctx = (CUcontext)CTX_BASE;
static int uuid_lookups;

/* visible is the GPU (index of fake_gpus) of ordinal dev, -1 if none. */
int visible(CUdevice dev)
{
	int order[FAKE_GPUS] = {0, 1}, n = FAKE_GPUS;
	const char *e = getenv("CUDA_VISIBLE_DEVICES");
	if (e) {
		n = 0;
		for (const char *p = e; *p && n < FAKE_GPUS; p++)
			if (*p >= '0' && *p < '0' + FAKE_GPUS)
				order[n++] = *p - '0';
	}
	return dev >= 0 && dev < n ? order[dev] : -1;
}

/* ctx_of: stream s's context (a default stream is the current context's) */
CUcontext ctx_of(CUstream s)
{
	return s == 0 || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ? current_ctx : ((struct fstream *)s)->ctx;
}

int ctx_slot(CUcontext c)
{
	uintptr_t v = (uintptr_t)c;
	if (v < CTX_BASE || v >= CTX_BASE + CTX_SLOTS)
		return -1;
	int s = (int)(v - CTX_BASE);
	return __atomic_load_n(&ctx_dev[s], __ATOMIC_ACQUIRE) >= 0 ? s : -1;
}

/* current_slot: the current context's slot; the first if none is */
int current_slot(void)
{
	int s = ctx_slot(current_ctx);
	return s < 0 ? 0 : s;
}

int current_device(void)
{
	return ctx_dev[current_slot()];
}
int cuCtxGetCurrent(CUcontext *c)
{
	asked();
	*c = current_ctx;
	return 0;
}

int cuCtxSetCurrent(CUcontext c)
{
	if (c && ctx_slot(c) < 0)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	current_ctx = c;
	return 0;
}

/* cuCtxPushCurrent makes c current, the context current before kept on
 * the thread's stack for cuCtxPopCurrent. */
#define CTX_STACK 8
static __thread CUcontext ctx_stack[CTX_STACK];
static __thread int ctx_depth;

int cuCtxPushCurrent_v2(CUcontext c)
{
	if (ctx_slot(c) < 0)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	if (ctx_depth == CTX_STACK)
		return 2;
	ctx_stack[ctx_depth++] = current_ctx;
	current_ctx = c;
	return 0;
}

int cuCtxPopCurrent_v2(CUcontext *c)
{
	if (!ctx_depth)
		return 201;
	if (c)
		*c = current_ctx;
	current_ctx = ctx_stack[--ctx_depth];
	return 0;
}

int cuCtxGetDevice(CUdevice *d)
{
	COUNTED();
	asked();
	int s = ctx_slot(current_ctx);
	if (s < 0)
		return 201;
	*d = ctx_dev[s];
	return 0;
}

/* cuCtxCreate makes a context on dev and makes it current. */
int cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice dev)
{
	(void)flags;
	if (visible(dev) < 0)
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	pthread_mutex_lock(&mu);
	int s = 2;
	while (s < CTX_SLOTS && ctx_dev[s] >= 0)
		s++;
	if (s < CTX_SLOTS)
		__atomic_store_n(&ctx_dev[s], dev, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mu);
	if (s == CTX_SLOTS)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	*c = current_ctx = (CUcontext)(uintptr_t)(CTX_BASE + s);
	return 0;
}

int cuCtxDestroy_v2(CUcontext c)
{
	int s = ctx_slot(c);
	if (s < 2)
		return 201; /* not made by cuCtxCreate */
	mem_context_gone(s);
	__atomic_store_n(&ctx_dev[s], -1, __ATOMIC_RELEASE);
	if (current_ctx == c)
		current_ctx = NULL;
	return 0;
}

int cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev)
{
	asked();
	int g = visible(dev);
	if (g < 0)
		return 101;
	__atomic_add_fetch(&uuid_lookups, 1, __ATOMIC_RELAXED);
	memcpy(uuid, fake_gpus[g].uuid, 16);
	return 0;
}

int cuDeviceGetUuid(unsigned char *uuid, CUdevice dev)
{
	asked();
	return cuDeviceGetUuid_v2(uuid, dev);
}

/* fakecuda_uuid_lookups is how many times a device's UUID was asked for. */
int fakecuda_uuid_lookups(void)
{
	return __atomic_load_n(&uuid_lookups, __ATOMIC_RELAXED);
}

int cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
	COUNTED();
	int g = visible(dev);
	if (g < 0)
		return 101;
	*v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? fake_gpus[g].sms : 1;
	return 0;
}

/* --- what carve's own Go code binds (internal/cuda) -------------------------- */

int cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

int cuDeviceGetCount(int *n)
{
	*n = 0;
	while (*n < FAKE_GPUS && visible(*n) >= 0)
		++*n;
	return 0;
}

int cuDeviceGet(CUdevice *d, int ordinal)
{
	if (visible(ordinal) < 0)
		return 101;
	*d = ordinal;
	return 0;
}

int cuDeviceGetName(char *name, int len, CUdevice dev)
{
	int g = visible(dev);
	if (g < 0)
		return 101;
	snprintf(name, (size_t)len, "%s", fake_gpus[g].name);
	return 0;
}

int cuGetErrorName(int r, const char **s)
{
	(void)r;
	*s = "CUDA_ERROR_FAKE";
	return 0;
}

/* cuDevicePrimaryCtxRetain hands out dev's primary context. It stands for
 * a client's connection to MPS too: with FAKECUDA_CLIENT_LOG set, it
 * appends "client PID PIPE_DIRECTORY" there (carve mps touch's tests). */
int cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice dev)
{
	if (visible(dev) < 0 || dev > 1)
		return 101;
	const char *log = getenv("FAKECUDA_CLIENT_LOG"), *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "client %d %s\n", (int)getpid(), pipe ? pipe : "-");
		fclose(f);
	}
	*c = (CUcontext)(uintptr_t)(CTX_BASE + dev);
	return 0;
}

int cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return visible(dev) < 0 ? 101 : 0;
}

#define NOT_SUPPORTED(name) \
	int name(void)      \
	{                   \
		return 801; \
	}
NOT_SUPPORTED(cuModuleLoadData)
NOT_SUPPORTED(cuFuncSetAttribute)
NOT_SUPPORTED(cuMemcpyDtoH_v2)
NOT_SUPPORTED(cuMemcpyHtoD_v2)
NOT_SUPPORTED(cuMemsetD32_v2)
NOT_SUPPORTED(cuMemHostAlloc)
NOT_SUPPORTED(cuMemHostGetDevicePointer_v2)
NOT_SUPPORTED(cuMemFreeHost)
NOT_SUPPORTED(cuMemGetAllocationGranularity)
NOT_SUPPORTED(cuStreamSetAttribute)
NOT_SUPPORTED(cuCtxResetPersistingL2Cache)
