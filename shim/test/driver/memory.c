/*
 * memory.c: the driver program's device memory, taken and given back by
 * each path a framework takes, and many threads doing so at once. Its
 * commands:
 *
 * Each by the path a framework takes (the calls looked up for CUDA 12.8,
 * but v1: "cuMemAlloc" for CUDA 3.0, the 32-bit flavour):
 *   alloc KIND BYTES   KIND: mem (cuMemAlloc_v2), v1, direct (cuMemAlloc_v2
 *                      by its exported name), pitch (BYTES a row, 4 rows),
 *                      managed, async (cuMemAllocAsync on the default
 *                      stream), pool (cuMemAllocFromPoolAsync from the
 *                      pool below), array (floats, 4 rows), array1 (the
 *                      same by the 32-bit flavour of CUDA 3.0), array3d
 *                      (floats, 4x4 rows), mipmap (a BYTES x BYTES square
 *                      of floats, three levels), vmm (cuMemCreate, an
 *                      address reserved, mapped), graph (an executable
 *                      graph with an allocation node of BYTES, freed in it)
 *                      -> "id N", or "rc N" if refused
 *   free ID            by the path that frees it -> "rc N"
 *   release ID, unmap ID, retain ID
 *                      a vmm allocation's cuMemRelease, cuMemUnmap,
 *                      cuMemRetainAllocationHandle alone -> "rc N"
 *   capture BYTES      a graph captured from cuMemAllocAsync and
 *                      cuMemFreeAsync on a stream -> "id N" or "rc N"
 *   glaunch ID, gupload ID, gtrim
 *                      cuGraphLaunch, cuGraphUpload, cuDeviceGraphMemTrim
 *   pool new|host|default|set|destroy, pool threshold|trim BYTES, pool reserved
 *                      make (on the device or the host) or pick the pool
 *                      "alloc pool" takes from; make it the device's
 *                      current pool; its release threshold; trim it
 *   heap BYTES         cuCtxSetLimit of the device malloc heap -> "rc N"
 *   meminfo [v1]       -> "meminfo FREE TOTAL rc N"
 *   totalmem [v1]      -> "totalmem BYTES rc N"
 *   fakemem            -> "fake TAKEN HIGH": the fake GPU's memory taken,
 *                      now and at most
 *   fakemb MB          the fake GPU's memory size
 *   flavours           -> "flavours V1 V2": calls of the fake's 32-bit
 *                      memory functions and of their later flavours
 *   ipcget ID, ipcopen HANDLE
 *                      cuIpcGetMemHandle of an allocation -> "ipc HANDLE";
 *                      cuIpcOpenMemHandle of one -> "id N"
 *   lookup NAME VERSION [ptds]
 *                      cuGetProcAddress -> "lookup NAME found|none"
 *   stress THREADS OPS SEED
 *                      threads make OPS random allocations and frees each
 *                      over the paths above, with synchronizations, pool
 *                      and graph memory trims and graph launches between,
 *                      and leave what they hold -> "stress OK REFUSED ERRORS"
 *   memcost N          N pairs of cuMemAlloc_v2 and cuMemFree_v2 of 4 KiB
 *                      -> "memcost NS": nanoseconds a pair
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"

enum { K_MEM = 1, K_V1, K_DIRECT, K_PITCH, K_MANAGED, K_ASYNC, K_POOL, K_ARRAY, K_ARRAY1, K_ARRAY3D, K_MIPMAP, K_VMM,
       K_GRAPH, K_IPC };
static const char *const kinds[] = {"", "mem", "v1", "direct", "pitch", "managed", "async", "pool", "array",
				    "array1", "array3d", "mipmap", "vmm", "graph", "ipc"};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

struct obj {
	int kind, released;
	uint64_t ptr, size;
	void *h;
};
#define OBJS 4096
static struct obj objs[OBJS];
static pthread_mutex_t objs_mu = PTHREAD_MUTEX_INITIALIZER;
static CUmemoryPool pool; /* the pool "pool" commands work on */

static int obj_add(const struct obj *o)
{
	pthread_mutex_lock(&objs_mu);
	int i = 1;
	while (i < OBJS && objs[i].kind)
		i++;
	if (i < OBJS)
		objs[i] = *o;
	pthread_mutex_unlock(&objs_mu);
	return i < OBJS ? i : -1;
}

static struct obj *obj_get(int id)
{
	return id > 0 && id < OBJS && objs[id].kind ? &objs[id] : NULL;
}

/* a CUmemAllocationProp: pinned, on device 0 */
static const int device_prop[8] = {1, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0};

/* graph makes an executable graph whose one allocation node takes bytes,
 * freed again within it; capture: the allocation captured from a stream. */
static CUresult graph(uint64_t bytes, int capture, void **exec)
{
	CUgraph g = NULL;
	CUresult r;
	if (capture) {
		CUstream s;
		((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate", 0))(&s, 0);
		((CUresult(*)(CUstream, int))proc("cuStreamBeginCapture", 0))(s, CU_STREAM_CAPTURE_MODE_RELAXED);
		CUdeviceptr d = 0;
		r = ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 0))(&d, bytes, s);
		if (r == 0)
			((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 0))(d, s);
		((CUresult(*)(CUstream, CUgraph *))proc("cuStreamEndCapture", 0))(s, &g);
		if (r != 0)
			return r;
	} else {
		((CUresult(*)(CUgraph *, unsigned))proc("cuGraphCreate", 0))(&g, 0);
		uint64_t params[16] = {0};
		memcpy((char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, &bytes, sizeof bytes);
		CUgraphNode a, f;
		r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, void *))proc(
		    "cuGraphAddMemAllocNode", 0))(&a, g, NULL, 0, params);
		if (r != 0)
			return r;
		CUdeviceptr d;
		memcpy(&d, (char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, sizeof d);
		((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr))proc(
		    "cuGraphAddMemFreeNode", 0))(&f, g, &a, 1, d);
	}
	return ((CUresult(*)(void **, CUgraph, unsigned long long))proc("cuGraphInstantiate", 0))(exec, g, 0);
}

/* alloc takes bytes of device memory by the path kind names. */
static CUresult alloc(int kind, uint64_t bytes, struct obj *o)
{
	memset(o, 0, sizeof *o);
	o->kind = kind, o->size = bytes;
	CUresult r = 1;
	CUdeviceptr d = 0;
	switch (kind) {
	case K_MEM:
		r = ((CUresult(*)(CUdeviceptr *, size_t))proc("cuMemAlloc", 0))(&d, bytes);
		break;
	case K_V1: {
		unsigned d32 = 0;
		r = ((CUresult(*)(unsigned *, unsigned))procv("cuMemAlloc", 3000, 0))(&d32, (unsigned)bytes);
		d = d32;
		break;
	}
	case K_DIRECT:
		r = ((CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"))(&d, bytes);
		break;
	case K_PITCH: {
		size_t pitch = 0;
		r = ((CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))proc("cuMemAllocPitch", 0))(
		    &d, &pitch, bytes, 4, 4);
		o->size = pitch * 4;
		break;
	}
	case K_MANAGED:
		r = ((CUresult(*)(CUdeviceptr *, size_t, unsigned))proc("cuMemAllocManaged", 0))(&d, bytes, 1);
		break;
	case K_ASYNC:
		r = ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 0))(&d, bytes, 0);
		break;
	case K_POOL:
		r = ((CUresult(*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))proc("cuMemAllocFromPoolAsync", 0))(
		    &d, bytes, pool, 0);
		break;
	case K_ARRAY: {
		CUDA_ARRAY_DESCRIPTOR a = {bytes / 16, 4, CU_AD_FORMAT_FLOAT, 1};
		r = ((CUresult(*)(void **, const void *))proc("cuArrayCreate", 0))(&o->h, &a);
		break;
	}
	case K_ARRAY1: { /* the 32-bit flavour of CUDA before 3.2 */
		struct {
			unsigned w, h;
			int format;
			unsigned channels;
		} a = {(unsigned)bytes / 16, 4, CU_AD_FORMAT_FLOAT, 1};
		r = ((CUresult(*)(void **, const void *))procv("cuArrayCreate", 3000, 0))(&o->h, &a);
		break;
	}
	case K_ARRAY3D: {
		CUDA_ARRAY3D_DESCRIPTOR a = {bytes / 64, 4, 4, CU_AD_FORMAT_FLOAT, 1, 0};
		r = ((CUresult(*)(void **, const void *))proc("cuArray3DCreate", 0))(&o->h, &a);
		break;
	}
	case K_MIPMAP: { /* bytes: the side of a square of floats, in three levels */
		CUDA_ARRAY3D_DESCRIPTOR a = {bytes, bytes, 0, CU_AD_FORMAT_FLOAT, 1, 0};
		r = ((CUresult(*)(void **, const void *, unsigned))proc("cuMipmappedArrayCreate", 0))(&o->h, &a, 3);
		break;
	}
	case K_VMM: {
		CUmemGenericAllocationHandle h = 0;
		r = ((CUresult(*)(CUmemGenericAllocationHandle *, size_t, const void *, unsigned long long))proc(
		    "cuMemCreate", 0))(&h, bytes, device_prop, 0);
		if (r != 0)
			break;
		((CUresult(*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))proc(
		    "cuMemAddressReserve", 0))(&d, bytes, 0, 0, 0);
		r = ((CUresult(*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))proc(
		    "cuMemMap", 0))(d, bytes, 0, h, 0);
		((CUresult(*)(CUdeviceptr, size_t, const void *, size_t))proc("cuMemSetAccess", 0))(d, bytes, NULL, 0);
		o->h = (void *)(uintptr_t)h;
		break;
	}
	case K_GRAPH:
		r = graph(bytes, 0, &o->h);
		break;
	}
	o->ptr = d;
	return r;
}

static CUresult release(struct obj *o)
{
	o->released = 1;
	return ((CUresult(*)(CUmemGenericAllocationHandle))proc("cuMemRelease", 0))((uintptr_t)o->h);
}

static CUresult unmap(struct obj *o)
{
	CUresult r = ((CUresult(*)(CUdeviceptr, size_t))proc("cuMemUnmap", 0))(o->ptr, o->size);
	((CUresult(*)(CUdeviceptr, size_t))proc("cuMemAddressFree", 0))(o->ptr, o->size);
	o->ptr = 0;
	return r;
}

/* dealloc gives o back by the path that frees its kind. */
static CUresult dealloc(struct obj *o)
{
	CUresult r = 1;
	switch (o->kind) {
	case K_MEM: case K_PITCH: case K_MANAGED:
		r = ((CUresult(*)(CUdeviceptr))proc("cuMemFree", 0))(o->ptr);
		break;
	case K_V1:
		r = ((CUresult(*)(unsigned))procv("cuMemFree", 3000, 0))((unsigned)o->ptr);
		break;
	case K_DIRECT:
		r = ((CUresult(*)(CUdeviceptr))dlsym(RTLD_DEFAULT, "cuMemFree_v2"))(o->ptr);
		break;
	case K_ASYNC: case K_POOL:
		r = ((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 0))(o->ptr, 0);
		break;
	case K_ARRAY: case K_ARRAY1: case K_ARRAY3D:
		r = ((CUresult(*)(void *))proc("cuArrayDestroy", 0))(o->h);
		break;
	case K_MIPMAP:
		r = ((CUresult(*)(void *))proc("cuMipmappedArrayDestroy", 0))(o->h);
		break;
	case K_VMM:
		r = o->ptr ? unmap(o) : 0;
		if (r == 0 && !o->released)
			r = release(o);
		break;
	case K_GRAPH:
		r = ((CUresult(*)(void *))proc("cuGraphExecDestroy", 0))(o->h);
		break;
	case K_IPC:
		r = ((CUresult(*)(CUdeviceptr))proc("cuIpcCloseMemHandle", 0))(o->ptr);
		break;
	}
	return r;
}

static int kind_of(const char *name)
{
	for (int k = 1; k < NKINDS; k++)
		if (strcmp(kinds[k], name) == 0)
			return k;
	return 0;
}

static CUresult graph_launch(void *exec, int upload)
{
	return ((CUresult(*)(void *, CUstream))proc(upload ? "cuGraphUpload" : "cuGraphLaunch", 0))(exec, 0);
}

/* --- many threads at once ------------------------------------------------------- */

static void *stress_exec; /* a graph every thread launches */

struct stress {
	int ops, ok, refused, errors;
	unsigned seed;
};

static void *stress_thread(void *arg)
{
	struct stress *st = arg;
	static const int paths[] = {K_MEM, K_PITCH, K_MANAGED, K_ASYNC, K_POOL, K_ARRAY, K_ARRAY3D, K_VMM, K_MIPMAP};
	struct obj live[48];
	int n = 0;
	for (int i = 0; i < st->ops; i++) {
		unsigned r = rand_r(&st->seed) % 100;
		CUresult rc = 0;
		if (r < 50 && n < 48) {
			int kind = paths[rand_r(&st->seed) % (sizeof paths / sizeof paths[0])];
			uint64_t bytes = kind == K_MIPMAP ? 64u << (rand_r(&st->seed) % 5)
							  : (1 + rand_r(&st->seed) % 64) * 65536ull;
			rc = alloc(kind, bytes, &live[n]);
			if (rc == 0)
				n++, st->ok++;
		} else if (r < 90 && n > 0) {
			int k = (int)(rand_r(&st->seed) % (unsigned)n);
			rc = dealloc(&live[k]);
			live[k] = live[--n];
		} else if (r < 94) {
			rc = ((CUresult(*)(CUstream))proc("cuStreamSynchronize", 0))(0);
		} else if (r < 96) {
			rc = ((CUresult(*)(CUmemoryPool, size_t))proc("cuMemPoolTrimTo", 0))(pool, 0);
		} else if (r < 98) {
			rc = graph_launch(stress_exec, 0);
		} else {
			rc = ((CUresult(*)(CUdevice))proc("cuDeviceGraphMemTrim", 0))(0);
		}
		if (rc == CUDA_ERROR_OUT_OF_MEMORY)
			st->refused++;
		else if (rc != 0)
			st->errors++;
	}
	return NULL; /* what is live stays allocated */
}

/* stress: n threads each make ops random allocations and frees over every
 * path, with synchronizations, trims and graph launches between. */
static void stress(int n, int ops, unsigned seed)
{
	pthread_t t[64];
	struct stress st[64];
	if (n > 64)
		n = 64;
	if (!pool) {
		int props[22] = {1, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0};
		((CUresult(*)(CUmemoryPool *, const void *))proc("cuMemPoolCreate", 0))(&pool, props);
	}
	if (!stress_exec && graph(8 << 20, 0, &stress_exec) != 0)
		stress_exec = NULL;
	for (int i = 0; i < n; i++) {
		st[i] = (struct stress){.ops = ops, .seed = seed + (unsigned)i * 7919};
		pthread_create(&t[i], NULL, stress_thread, &st[i]);
	}
	int ok = 0, refused = 0, errors = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		ok += st[i].ok, refused += st[i].refused, errors += st[i].errors;
	}
	printf("stress %d %d %d\n", ok, refused, errors);
}

/* memory_command answers the memory commands (see the top of this file);
 * 0 if line is none of them. */
int memory_command(char *line)
{
	char a[64] = "", b[64] = "";
	unsigned long long n = 0, m = 0;
	int id;
	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, "alloc %63s %llu", a, &n) == 2) {
		struct obj o;
		int kind = kind_of(a);
		CUresult r = kind ? alloc(kind, n, &o) : 1;
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("id %d\n", obj_add(&o));
	} else if (sscanf(line, "free %d", &id) == 1) {
		struct obj *o = obj_get(id);
		CUresult r = o ? dealloc(o) : 1;
		if (o && r == 0)
			o->kind = 0;
		printf("rc %d\n", r);
	} else if (sscanf(line, "release %d", &id) == 1) {
		struct obj *o = obj_get(id);
		printf("rc %d\n", o && o->kind == K_VMM ? release(o) : 1);
	} else if (sscanf(line, "unmap %d", &id) == 1) {
		struct obj *o = obj_get(id);
		printf("rc %d\n", o && o->kind == K_VMM && o->ptr ? unmap(o) : 1);
	} else if (sscanf(line, "retain %d", &id) == 1) {
		struct obj *o = obj_get(id);
		CUmemGenericAllocationHandle h = 0;
		CUresult r = o && o->kind == K_VMM
				 ? ((CUresult(*)(CUmemGenericAllocationHandle *, void *))proc("cuMemRetainAllocationHandle", 0))(
				       &h, (void *)(uintptr_t)o->ptr)
				 : 1;
		if (o && r == 0)
			o->released = 0; /* one more reference for dealloc to release */
		printf("rc %d\n", r);
	} else if (sscanf(line, "capture %llu", &n) == 1) {
		struct obj o = {.kind = K_GRAPH, .size = n};
		CUresult r = graph(n, 1, &o.h);
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("id %d\n", obj_add(&o));
	} else if (sscanf(line, "glaunch %d", &id) == 1 || sscanf(line, "gupload %d", &id) == 1) {
		struct obj *o = obj_get(id);
		printf("rc %d\n", o && o->kind == K_GRAPH ? graph_launch(o->h, line[1] == 'u') : 1);
	} else if (strcmp(line, "gtrim") == 0) {
		printf("rc %d\n", ((CUresult(*)(CUdevice))proc("cuDeviceGraphMemTrim", 0))(0));
	} else if (sscanf(line, "pool %63s %llu", a, &n) >= 1) {
		CUresult r = 0;
		if (strcmp(a, "new") == 0 || strcmp(a, "host") == 0) {
			int props[22] = {1, 0, a[0] == 'n' ? CU_MEM_LOCATION_TYPE_DEVICE : 2, 0};
			r = ((CUresult(*)(CUmemoryPool *, const void *))proc("cuMemPoolCreate", 0))(&pool, props);
		} else if (strcmp(a, "default") == 0) {
			r = ((CUresult(*)(CUmemoryPool *, CUdevice))proc("cuDeviceGetDefaultMemPool", 0))(&pool, 0);
		} else if (strcmp(a, "threshold") == 0) {
			uint64_t v = n;
			r = ((CUresult(*)(CUmemoryPool, int, void *))proc("cuMemPoolSetAttribute", 0))(
			    pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
		} else if (strcmp(a, "trim") == 0) {
			r = ((CUresult(*)(CUmemoryPool, size_t))proc("cuMemPoolTrimTo", 0))(pool, n);
		} else if (strcmp(a, "destroy") == 0) {
			r = ((CUresult(*)(CUmemoryPool))proc("cuMemPoolDestroy", 0))(pool);
			pool = NULL;
		} else if (strcmp(a, "set") == 0) {
			r = ((CUresult(*)(CUdevice, CUmemoryPool))proc("cuDeviceSetMemPool", 0))(0, pool);
		} else if (strcmp(a, "reserved") == 0) {
			uint64_t v = 0;
			r = ((CUresult(*)(CUmemoryPool, int, void *))proc("cuMemPoolGetAttribute", 0))(
			    pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
			printf("reserved %llu\n", (unsigned long long)v);
			return 1;
		}
		printf("rc %d\n", r);
	} else if (sscanf(line, "heap %llu", &n) == 1) {
		printf("rc %d\n", ((CUresult(*)(int, size_t))proc("cuCtxSetLimit", 0))(CU_LIMIT_MALLOC_HEAP_SIZE, n));
	} else if (strncmp(line, "meminfo", 7) == 0) {
		if (strstr(line, "v1")) {
			unsigned f = 0, t = 0;
			CUresult r = ((CUresult(*)(unsigned *, unsigned *))procv("cuMemGetInfo", 3000, 0))(&f, &t);
			printf("meminfo %u %u rc %d\n", f, t, r);
		} else {
			size_t f = 0, t = 0;
			CUresult r = ((CUresult(*)(size_t *, size_t *))proc("cuMemGetInfo", 0))(&f, &t);
			printf("meminfo %zu %zu rc %d\n", f, t, r);
		}
	} else if (strncmp(line, "totalmem", 8) == 0) {
		if (strstr(line, "v1")) {
			unsigned t = 0;
			CUresult r = ((CUresult(*)(unsigned *, CUdevice))procv("cuDeviceTotalMem", 3000, 0))(&t, 0);
			printf("totalmem %u rc %d\n", t, r);
		} else {
			size_t t = 0;
			CUresult r = ((CUresult(*)(size_t *, CUdevice))proc("cuDeviceTotalMem", 0))(&t, 0);
			printf("totalmem %zu rc %d\n", t, r);
		}
	} else if (strcmp(line, "fakemem") == 0) {
		uint64_t out[2];
		((void (*)(uint64_t *))dlsym(h, "fakecuda_mem"))(out);
		printf("fake %llu %llu\n", (unsigned long long)out[0], (unsigned long long)out[1]);
	} else if (sscanf(line, "fakemb %llu", &n) == 1) {
		((void (*)(long long))dlsym(h, "fakecuda_mem_mb"))((long long)n);
		printf("ok\n");
	} else if (strcmp(line, "flavours") == 0) {
		int out[2];
		((void (*)(int *))dlsym(h, "fakecuda_flavours"))(out);
		printf("flavours %d %d\n", out[0], out[1]);
	} else if (sscanf(line, "ipcget %d", &id) == 1) {
		struct obj *o = obj_get(id);
		CUipcMemHandle ipc;
		CUresult r = o ? ((CUresult(*)(CUipcMemHandle *, CUdeviceptr))proc("cuIpcGetMemHandle", 0))(&ipc, o->ptr) : 1;
		uint64_t v;
		memcpy(&v, ipc.reserved, sizeof v);
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("ipc %llx\n", (unsigned long long)v);
	} else if (sscanf(line, "ipcopen %llx", &n) == 1) {
		CUipcMemHandle ipc = {{0}};
		memcpy(ipc.reserved, &n, sizeof n);
		struct obj o = {.kind = K_IPC};
		CUdeviceptr d = 0;
		CUresult r = ((CUresult(*)(CUdeviceptr *, CUipcMemHandle, unsigned))proc("cuIpcOpenMemHandle", 0))(&d, ipc, 1);
		o.ptr = d;
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("id %d\n", obj_add(&o));
	} else if (sscanf(line, "lookup %63s %llu %63s", a, &n, b) >= 2) {
		void *f = procv(a, (int)n, strcmp(b, "ptds") == 0);
		printf("lookup %s %s\n", a, f ? "found" : "none");
	} else if (sscanf(line, "stress %llu %llu %63s", &n, &m, a) == 3) {
		stress((int)n, (int)m, (unsigned)strtoul(a, NULL, 10));
	} else if (sscanf(line, "memcost %llu", &n) == 1) {
		CUresult (*al)(CUdeviceptr *, size_t) = proc("cuMemAlloc", 0);
		CUresult (*fr)(CUdeviceptr) = proc("cuMemFree", 0);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long long i = 0; i < n; i++) {
			CUdeviceptr d;
			al(&d, 4096);
			fr(d);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("memcost %.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)(n ? n : 1));
	} else {
		return 0;
	}
	return 1;
}
