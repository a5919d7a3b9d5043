/*
 * A fake libcuda.so.1 for testing libcarve.so without a GPU. It offers what
 * the shim and the frameworks it sits under use:
 *
 *   - the launch-tools export table (subscribe, enable), with one subscriber
 *     at a time as the real driver allows (a second gets
 *     CUDA_ERROR_ALREADY_ACQUIRED);
 *   - cuGetProcAddress (v1 and v2, with the per-thread default stream
 *     flavour) answering with the functions below by name;
 *   - kernel launches through every entry point, each calling the launch
 *     callback with a synthetic descriptor the way the driver does, and
 *     taking FAKECUDA_KERNEL_US microseconds on its stream;
 *   - streams, events, stream capture and synchronization on that clock;
 *   - cuDeviceGetAttribute (132 SMs);
 *   - two devices with UUIDs of their own, a primary context on each, and
 *     contexts made and destroyed (cuCtxCreate, cuCtxDestroy), current
 *     per thread;
 *   - FAKECUDA_FAULT_AT=N: the N-th launch faults; every call after it
 *     returns CUDA_ERROR_ILLEGAL_ADDRESS, as a real context does;
 *   - FAKECUDA_INJECT=1: cuInit loads a profiler's injection, as Nsight
 *     Compute's does, which subscribes to the launch callback through the
 *     cuGetExportTable the program would find (dlsym RTLD_DEFAULT); =2: it
 *     subscribes through the driver's own table, bypassing any shim.
 *
 * Test entry points (fakecuda_*) let a test see what the shim did.
 * FAKECUDA_NO_TABLE=1 makes cuGetExportTable fail (a driver without the
 * interface); FAKECUDA_NEED_INIT=1 makes it fail until cuInit was called.
 * With CARVE_TEST_CLOCK, its kernels and synchronizations run on the test's
 * virtual clock (../test/vclock.h) instead of CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../carve_tmd.h"
#include "../cuda_api.h"
#include "../test/vclock.h"

typedef void (*launch_cb)(void *user, int domain, int cbid, const void *params);

static const unsigned char tools_uuid[16] = {
	0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
	0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static launch_cb cb;
static void *cb_user;
static int enabled[16][64]; /* [domain][cbid], of the one subscriber */
static int initialized;
static int launches, faulted;
static uint32_t last_mask[5];
static int last_called;
static int bare; /* launches no callback saw */

/* --- the launch-tools table ---------------------------------------------- */

static int fake_subscribe(uint32_t *handle, launch_cb f, void *user)
{
	pthread_mutex_lock(&mu);
	if (cb) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_ALREADY_ACQUIRED;
	}
	cb = f;
	cb_user = user;
	*handle = 7;
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_unsubscribe(uint32_t handle)
{
	if (handle != 7)
		return 1;
	pthread_mutex_lock(&mu);
	__atomic_store_n(&cb, NULL, __ATOMIC_RELEASE);
	memset(enabled, 0, sizeof enabled);
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_subscribe_ex(uint32_t *handle, launch_cb f, void *user, void *more)
{
	(void)more;
	return fake_subscribe(handle, f, user);
}

static int fake_enable(uint32_t on, uint32_t handle, int domain, int cbid)
{
	if (handle != 7 || domain < 0 || domain >= 16 || cbid < 0 || cbid >= 64)
		return 1;
	enabled[domain][cbid] = on != 0;
	return 0;
}

static int fake_enable_domain(uint32_t on, uint32_t handle, int domain)
{
	if (handle != 7 || domain < 0 || domain >= 16)
		return 1;
	for (int i = 0; i < 64; i++)
		enabled[domain][i] = on != 0;
	return 0;
}

/* entry 7, as Nsight Compute calls it: a domain on or off */
static int fake_enable_domain_ex(uint32_t on, uint32_t handle, int domain, uintptr_t more)
{
	(void)more;
	return fake_enable_domain(on, handle, domain);
}

static uintptr_t table[12] = {sizeof table};

/* the injection's callback: counts launches */
static int injected;
static void inject_cb(void *user, int domain, int cbid, const void *params)
{
	(void)user, (void)params;
	if (domain == 0xb && cbid == 1)
		__atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED);
}

int fakecuda_injected(void)
{
	return __atomic_load_n(&injected, __ATOMIC_RELAXED);
}

static int get_table(const void **out, const void *uuid);

static void inject(int how)
{
	int (*get)(const void **, const void *) = get_table; /* the driver's own, not interposable */
	if (how == 1)
		get = (int (*)(const void **, const void *))dlsym(RTLD_DEFAULT, "cuGetExportTable");
	const uintptr_t *t;
	uint32_t h;
	if (get((const void **)&t, tools_uuid) == 0 &&
	    ((int (*)(uint32_t *, launch_cb, void *, void *))t[11])(&h, inject_cb, NULL, NULL) == 0)
		((int (*)(uint32_t, uint32_t, int, int))t[6])(1, h, 0xb, 1);
}

int cuInit(unsigned int flags)
{
	(void)flags;
	if (!initialized) {
		initialized = 1;
		const char *e = getenv("FAKECUDA_INJECT");
		if (e && (*e == '1' || *e == '2'))
			inject(*e - '0');
	}
	return 0;
}

int cuGetExportTable(const void **out, const void *uuid)
{
	return get_table(out, uuid);
}

static int get_table(const void **out, const void *uuid)
{
	const char *e = getenv("FAKECUDA_NO_TABLE");
	if (e && *e == '1')
		return CUDA_ERROR_NOT_FOUND;
	e = getenv("FAKECUDA_NEED_INIT");
	if (e && *e == '1' && !initialized)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	if (memcmp(uuid, tools_uuid, sizeof tools_uuid) != 0)
		return 1;
	table[3] = (uintptr_t)fake_subscribe;
	table[4] = (uintptr_t)fake_unsubscribe;
	table[6] = (uintptr_t)fake_enable;
	table[7] = (uintptr_t)fake_enable_domain_ex;
	table[9] = (uintptr_t)fake_enable_domain;
	table[10] = (uintptr_t)fake_enable; /* an entry the shim passes through, as profilers use some */
	table[11] = (uintptr_t)fake_subscribe_ex;
	*out = table;
	return 0;
}

/* --- time, streams and events --------------------------------------------- */

static uint64_t now_ns(void)
{
	struct carve_vclock *c = vclock();
	if (c)
		return vclock_now(c);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct carve_vclock *c = vclock();
	if (c) {
		vclock_wait(c, t);
		return;
	}
	for (uint64_t n = now_ns(); n < t; n = now_ns()) {
		struct timespec ts = {0, (long)(t - n)};
		nanosleep(&ts, NULL);
	}
}

struct fstream {
	uint64_t done_at; /* when the last work submitted finishes */
	int capturing;
};
static struct fstream default_stream;
#define MAX_STREAMS 256
static struct fstream *streams[MAX_STREAMS];
static int nstreams;

static struct fstream *stream_of(CUstream s)
{
	if (s == 0 || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return &default_stream;
	return (struct fstream *)s;
}

int cuStreamCreate(CUstream *s, unsigned flags)
{
	(void)flags;
	struct fstream *f = calloc(1, sizeof *f);
	pthread_mutex_lock(&mu);
	if (nstreams < MAX_STREAMS)
		streams[nstreams++] = f;
	pthread_mutex_unlock(&mu);
	*s = f;
	return 0;
}

static long long kernel_us = -1; /* set by a test; -1: FAKECUDA_KERNEL_US */

static uint64_t kernel_ns(void)
{
	if (kernel_us >= 0)
		return (uint64_t)kernel_us * 1000;
	const char *e = getenv("FAKECUDA_KERNEL_US");
	return e ? (uint64_t)(atof(e) * 1000) : 0;
}

/* fakecuda_kernel_us sets how long each later kernel takes. */
void fakecuda_kernel_us(long long us)
{
	__atomic_store_n(&kernel_us, us, __ATOMIC_RELAXED);
}

/* --- devices and contexts -------------------------------------------------- */

/* Two GPUs with UUIDs of their own (the first is that of the topology in
 * internal/topo/testdata). A context is a slot, named (CUcontext)(0xc0 +
 * slot): 0xc0 and 0xc1 are the primary contexts of devices 0 and 1, the
 * rest made by cuCtxCreate, the lowest free slot first (so a handle
 * destroyed comes back). Each thread starts with 0xc0 current. */
static const unsigned char dev_uuid[2][16] = {
	{0x72, 0x60, 0x2e, 0xc6, 0x31, 0x0b, 0x1a, 0xda, 0xb0, 0x2f, 0x5c, 0x7e, 0xc6, 0x0e, 0x17, 0xef},
	{0x5d, 0x1e, 0x2b, 0x7a, 0x0c, 0x44, 0x4f, 0x0e, 0x9a, 0x31, 0x7b, 0xe0, 0xc2, 0xf4, 0xd6, 0xa1},
};
#define CTX_BASE 0xc0
#define CTX_SLOTS 8
static int ctx_dev[CTX_SLOTS] = {0, 1, -1, -1, -1, -1, -1, -1}; /* -1: free */
static __thread CUcontext current_ctx = (CUcontext)CTX_BASE;
static int uuid_lookups;

static int ctx_slot(CUcontext c)
{
	uintptr_t v = (uintptr_t)c;
	if (v < CTX_BASE || v >= CTX_BASE + CTX_SLOTS)
		return -1;
	int s = (int)(v - CTX_BASE);
	return __atomic_load_n(&ctx_dev[s], __ATOMIC_ACQUIRE) >= 0 ? s : -1;
}

int cuCtxGetCurrent(CUcontext *c)
{
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

int cuCtxGetDevice(CUdevice *d)
{
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
	if (dev < 0 || dev > 1)
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
	__atomic_store_n(&ctx_dev[s], -1, __ATOMIC_RELEASE);
	if (current_ctx == c)
		current_ctx = NULL;
	return 0;
}

int cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev)
{
	if (dev < 0 || dev > 1)
		return 101;
	__atomic_add_fetch(&uuid_lookups, 1, __ATOMIC_RELAXED);
	memcpy(uuid, dev_uuid[dev], 16);
	return 0;
}

int cuDeviceGetUuid(unsigned char *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

/* fakecuda_uuid_lookups is how many times a device's UUID was asked for. */
int fakecuda_uuid_lookups(void)
{
	return __atomic_load_n(&uuid_lookups, __ATOMIC_RELAXED);
}

int cuThreadExchangeStreamCaptureMode(int *mode)
{
	*mode = 0;
	return 0;
}

static int error(void)
{
	return __atomic_load_n(&faulted, __ATOMIC_ACQUIRE) ? 700 : 0;
}

struct fevent {
	uint64_t at;
};

int cuEventCreate(CUevent *e, unsigned flags)
{
	(void)flags;
	*e = calloc(1, sizeof(struct fevent));
	return 0;
}

int cuEventDestroy_v2(CUevent e)
{
	free(e);
	return 0;
}

int cuEventRecord(CUevent e, CUstream s)
{
	pthread_mutex_lock(&mu);
	((struct fevent *)e)->at = stream_of(s)->done_at;
	pthread_mutex_unlock(&mu);
	return error();
}

int cuEventQuery(CUevent e)
{
	if (error())
		return error();
	return now_ns() >= ((struct fevent *)e)->at ? 0 : CUDA_ERROR_NOT_READY;
}

int cuEventSynchronize(CUevent e)
{
	sleep_until(((struct fevent *)e)->at);
	return error();
}

int cuStreamQuery(CUstream s)
{
	if (error())
		return error();
	return now_ns() >= stream_of(s)->done_at ? 0 : CUDA_ERROR_NOT_READY;
}

int cuStreamSynchronize(CUstream s)
{
	sleep_until(stream_of(s)->done_at);
	if (cb && enabled[6][0x13]) /* a callback of another domain, as the driver makes */
		cb(cb_user, 6, 0x13, NULL);
	if (cb && enabled[7][2]) /* one enabled through entry 10 */
		cb(cb_user, 7, 2, NULL);
	return error();
}

int cuCtxSynchronize(void)
{
	uint64_t t = default_stream.done_at;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nstreams; i++)
		if (streams[i]->done_at > t)
			t = streams[i]->done_at;
	pthread_mutex_unlock(&mu);
	sleep_until(t);
	return error();
}

int cuStreamBeginCapture_v2(CUstream s, int mode)
{
	(void)mode;
	stream_of(s)->capturing = 1;
	return 0;
}

int cuStreamEndCapture(CUstream s, CUgraph *g)
{
	stream_of(s)->capturing = 0;
	*g = (CUgraph)0x1;
	return 0;
}

int cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
	(void)dev;
	*v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 132 : 1;
	return 0;
}

/* --- launches --------------------------------------------------------------- */

/* fake_launch runs one launch: the callback with a descriptor of the given
 * version (what the driver does just before uploading it), then the kernel's
 * time on the stream. */
static int fake_launch(int version, CUstream s)
{
	if (error())
		return error();
	uint8_t tmd[512];
	memset(tmd, 0, sizeof tmd);
	tmd[CARVE_TMD_VERSION_OFFSET] = (uint8_t)version;
	struct {
		uint32_t size;
		uint8_t pad[CARVE_PARAMS_TMD_OFFSET - 4];
		void *tmd;
		uint64_t more;
	} params = {.size = sizeof params, .tmd = tmd};
	int called = 0;
	launch_cb now_cb = __atomic_load_n(&cb, __ATOMIC_ACQUIRE);
	if (now_cb && enabled[0xb][1]) {
		now_cb(cb_user, 0xb, 1, &params);
		called = 1;
	} else {
		__atomic_add_fetch(&bare, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&mu);
	if (version >= CARVE_TMD_V_HOPPER) {
		memcpy(last_mask, tmd + CARVE_TMD_HOPPER_MASK_OFFSET, 16);
	} else {
		memcpy(last_mask, tmd + CARVE_TMD_VOLTA_MASK_OFFSET, 8);
		last_mask[2] = last_mask[3] = 0;
	}
	uint32_t w0;
	memcpy(&w0, tmd + CARVE_TMD_HOPPER_ENABLE_OFFSET, 4);
	last_mask[4] = w0 >> CARVE_TMD_HOPPER_ENABLE_BIT;
	last_called = called;
	struct fstream *f = stream_of(s);
	if (!f->capturing) {
		uint64_t t = now_ns();
		f->done_at = (f->done_at > t ? f->done_at : t) + kernel_ns();
	}
	const char *at = getenv("FAKECUDA_FAULT_AT");
	if (++launches == (at ? atoi(at) : -1))
		__atomic_store_n(&faulted, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mu);
	return 0;
}

int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned sh, CUstream s, void **p, void **e)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)p, (void)e;
	return fake_launch(CARVE_TMD_V_HOPPER, s);
}

int cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned sh, CUstream s, void **p, void **e)
{
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}

int cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)f, (void)p, (void)e;
	return fake_launch(CARVE_TMD_V_HOPPER, c->hStream);
}

int cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			      unsigned bz, unsigned sh, CUstream s, void **p)
{
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, NULL);
}

int cuGraphLaunch(CUgraphExec g, CUstream s)
{
	(void)g;
	return fake_launch(CARVE_TMD_V_HOPPER, s);
}

/* --- cuGetProcAddress ------------------------------------------------------- */

static const struct {
	const char *name;
	void *fn, *ptsz;
} procs[] = {
	{"cuLaunchKernel", (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz},
	{"cuLaunchKernelEx", (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx},
	{"cuLaunchCooperativeKernel", (void *)cuLaunchCooperativeKernel, (void *)cuLaunchCooperativeKernel},
	{"cuGraphLaunch", (void *)cuGraphLaunch, (void *)cuGraphLaunch},
	{"cuStreamCreate", (void *)cuStreamCreate, (void *)cuStreamCreate},
	{"cuStreamSynchronize", (void *)cuStreamSynchronize, (void *)cuStreamSynchronize},
	{"cuStreamQuery", (void *)cuStreamQuery, (void *)cuStreamQuery},
	{"cuCtxSynchronize", (void *)cuCtxSynchronize, (void *)cuCtxSynchronize},
	{"cuEventCreate", (void *)cuEventCreate, (void *)cuEventCreate},
	{"cuEventDestroy", (void *)cuEventDestroy_v2, (void *)cuEventDestroy_v2},
	{"cuEventRecord", (void *)cuEventRecord, (void *)cuEventRecord},
	{"cuEventQuery", (void *)cuEventQuery, (void *)cuEventQuery},
	{"cuEventSynchronize", (void *)cuEventSynchronize, (void *)cuEventSynchronize},
	{"cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2, (void *)cuStreamBeginCapture_v2},
	{"cuStreamEndCapture", (void *)cuStreamEndCapture, (void *)cuStreamEndCapture},
	{"cuDeviceGetAttribute", (void *)cuDeviceGetAttribute, (void *)cuDeviceGetAttribute},
	{"cuGetExportTable", (void *)cuGetExportTable, (void *)cuGetExportTable},
	{"cuInit", (void *)cuInit, (void *)cuInit},
	{"cuCtxGetCurrent", (void *)cuCtxGetCurrent, (void *)cuCtxGetCurrent},
	{"cuCtxSetCurrent", (void *)cuCtxSetCurrent, (void *)cuCtxSetCurrent},
	{"cuCtxGetDevice", (void *)cuCtxGetDevice, (void *)cuCtxGetDevice},
	{"cuCtxCreate", (void *)cuCtxCreate_v2, (void *)cuCtxCreate_v2},
	{"cuCtxDestroy", (void *)cuCtxDestroy_v2, (void *)cuCtxDestroy_v2},
	{"cuDeviceGetUuid", (void *)cuDeviceGetUuid_v2, (void *)cuDeviceGetUuid_v2},
};

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status);

int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	(void)status;
	if (strcmp(symbol, "cuGetProcAddress") == 0) {
		*pfn = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
		return 0;
	}
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
		if (strcmp(procs[i].name, symbol) == 0) {
			*pfn = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? procs[i].ptsz : procs[i].fn;
			return 0;
		}
	}
	*pfn = NULL;
	return CUDA_ERROR_NOT_FOUND;
}

/* --- what tests read ---------------------------------------------------------- */

int fakecuda_last(uint32_t out[5]);

/* fakecuda_launch runs one launch with a descriptor of the given version
 * on the default stream, as the launch entry points do. out[0..3] receive
 * the four Hopper mask words (or the two Volta words in out[0..1]), out[4]
 * the enable bit. Returns 1 if the callback ran. */
int fakecuda_launch(int version, uint32_t out[5])
{
	fake_launch(version, 0);
	return fakecuda_last(out);
}

/* fakecuda_bare is the number of launches no callback saw. */
int fakecuda_bare(void)
{
	return __atomic_load_n(&bare, __ATOMIC_RELAXED);
}

/* fakecuda_last copies what the last launch's callback left in its
 * descriptor; returns 1 if a callback ran for it. */
int fakecuda_last(uint32_t out[5])
{
	pthread_mutex_lock(&mu);
	memcpy(out, last_mask, sizeof last_mask);
	int called = last_called;
	pthread_mutex_unlock(&mu);
	return called;
}
